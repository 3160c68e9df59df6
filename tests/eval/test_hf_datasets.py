"""Eval datasets through HF ``datasets.load_dataset`` pinned to a commit, over HTTP from a local hub."""

from __future__ import annotations

import json
from pathlib import Path

import datasets.config
import pytest
from huggingface_hub import constants
from servers.hf_hub_server import HubServer, hub_server  # noqa: F401

from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.eval.datasets.base import Passage, subset_ids
from graphwalk_core.eval.datasets.hf import ColumnMap, load_hub_dataset

REPO = "tests/hotpot-mini"
SHA = "8c3f1d2e4b5a69788796a5b4c3d2e1f0a9b8c7d6"


def hotpot_row(i: int) -> dict[str, object]:
    """A HotpotQA-shaped row (the hub's layout): context and supporting_facts are structs of lists."""
    return {
        "id": f"q{i}",
        "question": f"Which river flows through town {i}?",
        "answer": f"River {i}",
        "context": {
            "title": [f"Town {i}", "River", f"Other {i}"],
            "sentences": [[f"Town {i} lies ", f"on River {i}."], ["Rivers flow."], [f"Noise {i}."]],
        },
        "supporting_facts": {"title": [f"Town {i}", "River"], "sent_id": [1, 0]},
    }


ROWS = [hotpot_row(i) for i in range(6)]
FILES = {
    "README.md": "A tiny HotpotQA-shaped dataset.\n",
    "data/validation.jsonl": "".join(json.dumps(r) + "\n" for r in ROWS),
}


@pytest.fixture
def hub(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HubServer:  # noqa: F811
    """The server holding REPO at SHA; both libraries online and caching under tmp_path."""
    hub_server.add_repo(REPO, SHA, FILES)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return hub_server


def load(hub: HubServer, tmp_path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    return load_hub_dataset(REPO, revision=SHA, endpoint=hub.endpoint, cache_dir=tmp_path / "ds", **kwargs)  # type: ignore[arg-type]


async def test_hotpot_layout_maps_to_questions_pooled_passages_and_supporting(
    hub: HubServer, tmp_path: Path
) -> None:
    ds = load(hub, tmp_path)
    assert [q.id for q in ds.questions] == [f"q{i}" for i in range(6)]
    q0 = ds.questions[0]
    assert (q0.text, q0.gold, q0.extra["supporting"]) == (
        "Which river flows through town 0?",
        ["River 0"],
        ["Town 0", "River"],
    )
    # the shared "River" passage is pooled once; sentences are joined
    assert len(ds.knowledge.passages) == 1 + 2 * 6
    assert ds.knowledge.passages[:3] == (
        Passage(id="Town 0", title="Town 0", text="Town 0 lies on River 0."),
        Passage(id="River", title="River", text="Rivers flow."),
        Passage(id="Other 0", title="Other 0", text="Noise 0."),
    )
    assert (ds.name, ds.split, ds.match, ds.knowledge.source) == (f"hf:{REPO}", "validation", "token", REPO)
    assert ds.info["hub"] == f"{REPO}@{SHA}"
    paths = {r.path for r in hub.requests}
    assert f"/datasets/{REPO}/resolve/{SHA}/data/validation.jsonl" in paths
    assert all(SHA in p for p in paths if REPO in p)  # every request was pinned to the commit


async def test_seeded_subset_reads_the_chosen_rows(hub: HubServer, tmp_path: Path) -> None:
    ds = load(hub, tmp_path, n=2, seed=3)
    assert [q.id for q in ds.questions] == subset_ids([f"q{i}" for i in range(6)], 2, 3)
    chosen = {q.id for q in ds.questions}
    titles = {p.title for p in ds.knowledge.passages}
    assert titles == {"River"} | {
        f"{k} {i}" for i in range(6) if f"q{i}" in chosen for k in ("Town", "Other")
    }


async def test_streaming_takes_the_first_rows_over_http(hub: HubServer, tmp_path: Path) -> None:
    streamed = load(hub, tmp_path, streaming=True, n=3)
    assert not list(tmp_path.glob("**/*.arrow"))  # nothing materialized for the stream
    assert streamed.info["streaming"] is True
    whole = load(hub, tmp_path)
    assert list(tmp_path.glob("**/*.arrow"))  # the whole split is Arrow on disk
    assert streamed.questions == whole.questions[:3]


async def test_column_mapping_for_another_layout(hub: HubServer, tmp_path: Path) -> None:
    rows = [
        {
            "qid": "a",
            "q": "Who wrote X?",
            "answers": {"text": ["Ann", "Ann B."]},
            "docs": [{"name": "X", "body": "X was written by Ann."}, {"name": "Y", "body": "Y."}],
            "gold_docs": ["X"],
        }
    ]
    hub.add_repo("tests/other", SHA, {"train.jsonl": json.dumps(rows[0]) + "\n"})
    mapping = ["id=qid", "question=q", "answers=answers", "passages=docs", "title=name", "text=body"]
    cols = ColumnMap.parse([*mapping, "supporting=gold_docs"])
    ds = load_hub_dataset(
        "tests/other", revision=SHA, split="train", columns=cols, endpoint=hub.endpoint, cache_dir=tmp_path
    )
    (q,) = ds.questions
    assert (q.id, q.text, q.gold, q.extra["supporting"]) == ("a", "Who wrote X?", ["Ann", "Ann B."], ["X"])
    assert q.extra["aliases"] is True  # SQuAD's texts are alternative references, not an answer set
    from graphwalk_core.eval.records import score_answer
    from graphwalk_core.eval.systems.base import SystemAnswer

    scored = score_answer(ds, q, SystemAnswer(answers=["Ann"]), run_id="r", system="s", ids={})
    assert (scored.em, scored.f1, scored.hits_at_1) == (1.0, 1.0, 1.0)
    assert [p.text for p in ds.knowledge.passages] == ["X was written by Ann.", "Y."]
    no_support = ColumnMap.parse([*mapping, "supporting="])
    assert no_support.supporting is None
    with pytest.raises(InputError, match="expected FIELD=COLUMN"):
        ColumnMap.parse(["questions=q"])


async def test_sentences_without_their_own_spaces_are_joined_with_one(hub: HubServer, tmp_path: Path) -> None:
    """2Wiki's sentences carry no leading space (HotpotQA's do): joined as written, "II.She" ran two words
    together at every sentence boundary."""
    row = {
        "id": "w1",
        "question": "Who was the mother of Lothair II?",
        "answer": "Ermengarde of Tours",
        "context": {
            "title": ["Lothair II", "Tours"],
            "sentences": [["Lothair II was a king.", "His mother was Ermengarde of Tours."], ["A city."]],
        },
        "supporting_facts": {"title": ["Lothair II"], "sent_id": [1]},
    }
    hub.add_repo("tests/2wiki-mini", SHA, {"validation.jsonl": json.dumps(row) + "\n"})
    ds = load_hub_dataset("tests/2wiki-mini", revision=SHA, endpoint=hub.endpoint, cache_dir=tmp_path)
    assert [p.text for p in ds.knowledge.passages] == [
        "Lothair II was a king. His mother was Ermengarde of Tours.",
        "A city.",
    ]


async def test_bad_input_names_what_is_wrong(hub: HubServer, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a full 40-hex commit sha"):
        load_hub_dataset(REPO, revision="main", endpoint=hub.endpoint)
    with pytest.raises(InputError, match=r"has no column query \(it has id, question, answer"):
        load(hub, tmp_path, columns=ColumnMap(question="query"))
    with pytest.raises(InputError, match="check the repo id and the sha"):
        load_hub_dataset("tests/nope", revision=SHA, endpoint=hub.endpoint, cache_dir=tmp_path)
    bad = {**ROWS[0], "supporting_facts": {"title": ["Elsewhere"], "sent_id": [0]}}
    hub.add_repo("tests/bad", SHA, {"validation.jsonl": json.dumps(bad) + "\n"})
    with pytest.raises(
        InputError, match="row 0: supporting title 'Elsewhere' is not one of the row's passages"
    ):
        load_hub_dataset("tests/bad", revision=SHA, endpoint=hub.endpoint, cache_dir=tmp_path)


async def test_offline_uncached_is_a_clear_error_and_unreachable_hub_too(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    before = len(hub.requests)
    with pytest.raises(
        ConfigError, match=r"offline mode is on \(HF_HUB_OFFLINE\) and the split is not in the "
    ):
        load(hub, tmp_path)
    assert len(hub.requests) == before  # offline: no request at all
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    unreachable = r"at http://127.0.0.1:9: ConnectionError: Couldn't reach 'tests/hotpot-mini' on the Hub"
    with pytest.raises(
        ConfigError,
        match=unreachable + r".*; copy the split to a local question file \(and passages file\) "
        r"and evaluate it as a custom dataset \(docs/eval-data.md\)$",
    ):
        load_hub_dataset(REPO, revision=SHA, endpoint="http://127.0.0.1:9", cache_dir=tmp_path / "x")


def test_cli_eval_hf_runs_a_system_over_a_hub_split(hub: HubServer, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from graphwalk_core.cli import app

    out = tmp_path / "out"
    args = ["eval", "hf", f"{REPO}@{SHA}", "--system", "entity-greedy", "--out", str(out), "--n", "2"]
    args += ["--hub-endpoint", hub.endpoint, "--decider", "fake", "--embed-model-path", "hashing", "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out / "results.parquet").to_pylist()
    assert [r["question_id"] for r in rows] == subset_ids([f"q{i}" for i in range(6)], 2, 0)
    assert {r["dataset"] for r in rows} == {f"hf:{REPO}"}
    bad = CliRunner().invoke(app, [*args[:3], "--system", "entity-greedy", "--out", str(out), "--column=x=y"])
    assert bad.exit_code == 2 and "column mapping 'x=y': expected FIELD=COLUMN" in bad.output
