"""Coverage features: what the question asks for that the path has not walked, independent of depth."""

from __future__ import annotations

import numpy as np
import pytest

from graphwalk_core.decisions.coverage import COVERAGE_SCALARS, Coverage, question_terms

DIRECT, DIRECTED, YEAR = ("directed_by", "out"), ("directed_by", "in"), ("release_year", "out")
STOP = None
COL = {name: i for i, name in enumerate(COVERAGE_SCALARS)}


@pytest.fixture(scope="module")
def coverage() -> Coverage:
    labeled = [
        ("who directed ENTITY", ["directed_by (out)"]),
        ("who is the director of ENTITY", ["directed_by (out)"]),
        ("when was ENTITY released", ["release_year (out)"]),
        ("what year was ENTITY released", ["release_year (out)"]),
        ("which films share the director of ENTITY", ["directed_by (out)", "directed_by (in)"]),
        ("which movies share the director of ENTITY", ["directed_by (out)", "directed_by (in)"]),
    ]
    return Coverage.fit(labeled * 3, alpha=1e-4)


def test_question_terms_carry_their_distance_to_the_entity() -> None:
    assert question_terms("who directed ENTITY") == [
        ("who", 2), ("directed", 1), ("who directed", 1), ("directed entity", 0), ("who entity", 0)
    ]  # fmt: skip
    # plural s dropped; no mention: distance 0
    assert question_terms("Directors films") == [("director", 0), ("film", 0), ("director film", 0)]


def test_word_pairs_skip_up_to_four_words() -> None:
    """Two phrasings of one hop share their pair even with words between them."""
    pairs = {t for t, _ in question_terms("which films share the same actor of ENTITY") if " " in t}
    assert {"share actor", "film actor", "share of"} <= pairs and "which actor" not in pairs  # 5 apart
    assert "share actor" in {t for t, _ in question_terms("the films that share actors with ENTITY")}
    assert question_terms("a b c d e f", window=2)[6:] == [
        ("a b", 0), ("b c", 0), ("c d", 0), ("d e", 0), ("e f", 0),
        ("a c", 0), ("b d", 0), ("c e", 0), ("d f", 0),
    ]  # fmt: skip


def test_fit_learns_the_moves_and_terms(coverage: Coverage) -> None:
    assert coverage.moves == ("directed_by (in)", "directed_by (out)", "release_year (out)")
    assert "director" in coverage.terms and "share" in coverage.terms
    assert coverage.coef.shape == coverage.first_coef.shape == (3, len(coverage.terms))


def test_stop_sees_what_is_left_not_how_deep_the_path_is(coverage: Coverage) -> None:
    question = "who directed ENTITY"

    def stop_row(path: tuple[tuple[str, str], ...]) -> np.ndarray:
        return coverage.scalars(question, path, [STOP])[0]

    covered, uncovered = stop_row((DIRECT,)), stop_row((YEAR,))  # both one hop deep
    assert covered[COL["remaining_now"]] == pytest.approx(0.0, abs=0.05)
    assert uncovered[COL["remaining_now"]] == pytest.approx(1.0, abs=0.05)
    # two hops that cover the question read like one hop that does (up to the ridge's tiny leftovers)
    np.testing.assert_allclose(stop_row((YEAR, DIRECT)), covered, atol=1e-5)
    assert not np.array_equal(covered, uncovered)


def test_a_relation_walked_twice_counts_twice(coverage: Coverage) -> None:
    question = "which films share the director of ENTITY"
    after_one = coverage.scalars(question, (DIRECT,), [DIRECTED, STOP])
    back, stop = after_one
    assert back[COL["residual"]] == pytest.approx(1.0, abs=0.05)
    assert back[COL["is_next"]] == 1.0
    assert back[COL["remaining_after"]] == pytest.approx(0.0, abs=0.05)
    assert stop[COL["remaining_now"]] == pytest.approx(1.0, abs=0.05)
    assert back[COL["relation_residual"]] == pytest.approx(1.0, abs=0.05)
    (stop_after_two,) = coverage.scalars(question, (DIRECT, DIRECTED), [STOP])
    assert stop_after_two[COL["remaining_now"]] == pytest.approx(0.0, abs=0.05)


def test_first_move_is_scored_at_the_start_only(coverage: Coverage) -> None:
    start = coverage.scalars("when was ENTITY released", (), [YEAR, DIRECT])
    assert start[0, COL["is_next"]] == 1.0 and start[1, COL["is_next"]] == 0.0
    assert start[0, COL["residual"]] == pytest.approx(1.0, abs=0.05)
    assert start[1, COL["residual"]] == pytest.approx(0.0, abs=0.05)
    assert start[1, COL["behind_next"]] == pytest.approx(1.0, abs=0.05)


def test_an_unknown_move_asks_nothing(coverage: Coverage) -> None:
    (row,) = coverage.scalars("who directed ENTITY", (YEAR,), [("filmed_in", "out")])
    remaining = row[COL["remaining_now"]]
    assert remaining == pytest.approx(1.0, abs=0.05)
    expected = np.zeros(len(COVERAGE_SCALARS), dtype=np.float32)
    expected[COL["remaining_now"]] = expected[COL["remaining_after"]] = remaining
    assert np.array_equal(row, expected)


def test_saved_and_loaded_coverage_gives_the_same_features(coverage: Coverage) -> None:
    again = Coverage.from_saved(coverage.manifest(), coverage.arrays())
    args = ("which movies share the director of ENTITY", (DIRECT,), [DIRECTED, YEAR, STOP])
    assert np.array_equal(again.scalars(*args), coverage.scalars(*args))
