"""The settle rule: a changed source is ready once its fingerprint held for two checks."""

from __future__ import annotations

import json

import pytest

from graphwalk_core.ingest.sources.settle import SettleState, settle


def test_a_change_is_ready_once_unchanged_at_the_next_check() -> None:
    start = SettleState(requested={"a": "1", "b": "1"}, observed={"a": "1", "b": "1"})
    moving = settle(start, {"a": "2", "b": "1"})
    assert (moving.ready, moving.settling) == ([], ["a"])
    assert moving.state == SettleState(requested={"a": "1", "b": "1"}, observed={"a": "2", "b": "1"})
    still_moving = settle(moving.state, {"a": "3", "b": "1"})
    assert (still_moving.ready, still_moving.settling) == ([], ["a"])
    settled = settle(still_moving.state, {"a": "3", "b": "1"})
    assert (settled.ready, settled.settling) == (["a"], [])
    assert settled.state == SettleState({"a": "3", "b": "1"}, {"a": "3", "b": "1"}, requests={"a": 1})
    assert settled.state.run_key("a") == "a:1:3"
    again = settle(settled.state, {"a": "3", "b": "1"})
    assert (again.ready, again.settling, again.state) == ([], [], settled.state)


def test_a_change_undone_before_it_settled_requests_nothing() -> None:
    moving = settle(SettleState(requested={"a": "1"}, observed={"a": "1"}), {"a": "2"})
    back = settle(moving.state, {"a": "1"})
    assert (back.ready, back.settling, back.state) == ([], [], SettleState({"a": "1"}, {"a": "1"}))


def test_new_sources_settle_too_and_undeclared_ones_lose_their_fingerprints() -> None:
    first = settle(SettleState(requested={"gone": "9"}, observed={"gone": "9"}), {"b": "1", "a": "1"})
    assert (first.ready, first.settling) == ([], ["b", "a"])
    assert first.state == SettleState(requested={}, observed={"b": "1", "a": "1"})
    assert settle(first.state, {"b": "1", "a": "1"}).ready == ["b", "a"]


def test_an_unreadable_source_is_not_ready_and_must_settle_again() -> None:
    start = SettleState(requested={"a": "1"}, observed={"a": "1"})
    missing = settle(start, {"a": None})
    assert (missing.ready, missing.settling) == ([], [])
    assert missing.state == SettleState(requested={"a": "1"}, observed={})
    back = settle(missing.state, {"a": "2"})
    assert (back.ready, back.settling) == ([], ["a"])
    assert settle(back.state, {"a": "2"}).ready == ["a"]
    # back with the bytes last requested: nothing to ingest
    assert settle(missing.state, {"a": "1"}).state == start


def test_state_round_trips_and_reads_the_earlier_flat_format() -> None:
    state = SettleState(requested={"b": "1"}, observed={"a": "2", "b": "1"})
    assert json.loads(state.to_json()) == {
        "observed": {"a": "2", "b": "1"},
        "requested": {"b": "1"},
        "requests": {},
    }
    assert SettleState.from_json(state.to_json()) == state
    assert SettleState.from_json('{"a": "1", "b": "2"}') == SettleState(requested={"a": "1", "b": "2"})
    assert SettleState.from_json(None) == SettleState.from_json("") == SettleState()
    with pytest.raises(ValueError, match=r"expected a JSON object, got '\[1\]'"):
        SettleState.from_json("[1]")


def test_every_request_has_its_own_run_key_also_for_content_seen_before() -> None:
    state = SettleState(requested={"a": "1"}, observed={"a": "1"})
    keys = []
    for fingerprint in ("2", "1", "2"):  # edited, put back, edited again
        state = settle(settle(state, {"a": fingerprint}).state, {"a": fingerprint}).state
        keys.append(state.run_key("a"))
    assert keys == ["a:1:2", "a:2:1", "a:3:2"]
    dropped = settle(state, {"b": "1"}).state  # "a" no longer declared: its count stays
    assert dropped == SettleState(requested={}, observed={"b": "1"}, requests={"a": 3})


def test_a_source_declared_again_gets_a_run_key_not_seen_before() -> None:
    state = SettleState()
    for current in ({"a": "1"}, {"a": "1"}, {"a": "2"}, {"a": "2"}, {}, {"a": "1"}, {"a": "1"}):
        decision = settle(state, current)
        state = decision.state
    # declared, edited, undeclared, declared again with its first bytes: Dagster must not drop this run
    assert (decision.ready, state.run_key("a")) == (["a"], "a:3:1")


def test_a_corrupted_state_is_refused_naming_what_is_wrong() -> None:
    """A state that is not JSON, or whose maps hold the wrong types, is a ValueError saying so; it was a bare
    JSONDecodeError, or a TypeError at a later check (``"x" + 1``)."""
    with pytest.raises(ValueError) as not_json:
        SettleState.from_json("garbage")
    assert (
        str(not_json.value)
        == "settle state is not JSON (Expecting value: line 1 column 1 (char 0)): 'garbage'"
    )
    bad = {
        '{"requested": {"a": 1}, "observed": {}}': "'requested' must map source ids to fingerprints (text)",
        '{"requested": {}, "observed": []}': "'observed' must map source ids to fingerprints (text)",
        '{"requested": {}, "requests": {"a": "x"}}': "'requests' must map source ids to counts (integers)",
        '{"requested": {}, "requests": {"a": true}}': "'requests' must map source ids to counts (integers)",
    }
    for text, why in bad.items():
        with pytest.raises(ValueError) as wrong:
            SettleState.from_json(text)
        assert str(wrong.value) == f"settle state: {why}, got {text!r}"
