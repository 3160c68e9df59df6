"""Exact-value tests of answer normalization, set metrics, percentiles, cost and bootstrap intervals."""

from __future__ import annotations

import pytest

from graphwalk_core.eval import metrics as m


def test_normalize_answer_lowercases_and_strips_punctuation_articles_whitespace() -> None:
    assert m.normalize_answer("The  Dark Knight!") == "dark knight"
    assert m.normalize_answer("A Beautiful Mind") == "beautiful mind"
    assert m.normalize_answer("an  apple, the pie.") == "apple pie"
    assert m.normalize_answer("Theodore") == "theodore"  # 'the' only as a whole word
    assert m.normalize_answer("  ") == ""


def test_answer_set_drops_duplicates_and_empties_keeping_order() -> None:
    assert m.answer_set(["Paris", "paris", "The Paris", "", "the", "Lyon"]) == ["paris", "lyon"]


def test_exact_match_over_sets() -> None:
    assert m.exact_match(["Y", "X"], ["x", "y"]) == 1.0
    assert m.exact_match(["X", "x", "Y"], ["X", "Y"]) == 1.0  # duplicates collapse
    assert m.exact_match(["X"], ["X", "Y"]) == 0.0
    assert m.exact_match(["a"], ["x"]) == 0.0  # the article alone normalizes to nothing


def test_empty_gold_and_empty_prediction() -> None:
    assert m.exact_match([], []) == 1.0
    assert m.f1_score([], []) == 1.0
    assert m.hits_at_1([], []) == 1.0
    assert m.f1_score(["x"], []) == 0.0
    assert m.hits_at_1(["x"], []) == 0.0
    assert m.f1_score([], ["x"]) == 0.0
    assert m.exact_match(["the"], ["x"]) == 0.0  # 'the' normalizes to nothing: an empty prediction
    assert m.f1_score(["", "an"], ["x"]) == 0.0


def test_set_f1_exact_values() -> None:
    # P = 1/2, R = 1/3 -> F1 = 2 * (1/6) / (5/6) = 0.4
    assert m.f1_score(["Q", "Z"], ["Q", "R", "S"]) == pytest.approx(0.4, abs=1e-12)
    assert m.f1_score(["Q", "R"], ["Q", "R", "S", "T"]) == pytest.approx(2 / 3, abs=1e-12)
    assert m.f1_score(["Tom Hanks"], ["Tom Cruise"]) == 0.0  # exact matching gives no partial credit


def test_token_f1_matches_squad_for_single_answers() -> None:
    # pred tokens: [barack, obama]; gold: [obama]: P = 1/2, R = 1 -> 2/3
    assert m.f1_score(["Barack Obama"], ["Obama"], match="token") == pytest.approx(2 / 3, abs=1e-12)
    assert m.f1_score(["the Obama"], ["Obama"], match="token") == 1.0
    assert m.f1_score(["Tom Hanks", "Meg Ryan"], ["Tom Hanks"], match="token") == pytest.approx(
        2 * 0.5 * 1.0 / 1.5, abs=1e-12
    )
    with pytest.raises(ValueError, match="unknown match mode"):
        m.f1_score(["x"], ["x"], match="fuzzy")  # type: ignore[arg-type]


def test_token_f1_scores_yes_no_all_or_nothing_as_the_hotpotqa_and_2wiki_scripts() -> None:
    """The official HotpotQA and 2Wiki F1 is 0 when either side normalizes to yes, no or noanswer and the
    two differ: "No Doubt" is not half right for the gold "no"."""
    assert m.f1_score(["No Doubt"], ["no"], match="token") == 0.0
    assert m.f1_score(["Yes, both are."], ["yes"], match="token") == 0.0
    assert m.f1_score(["no"], ["No Man's Land"], match="token") == 0.0
    assert m.f1_score(["noanswer"], ["noanswer available"], match="token") == 0.0
    assert m.f1_score(["No."], ["no"], match="token") == 1.0
    # other answers keep their token F1: [no, doubt] against [doubt, fire]: P = R = 1/2
    assert m.f1_score(["No Doubt"], ["Doubt Fire"], match="token") == 0.5


def test_hits_at_1_uses_the_first_prediction() -> None:
    assert m.hits_at_1(["y", "x"], ["X"]) == 0.0
    assert m.hits_at_1(["The X.", "y"], ["x"]) == 1.0
    assert m.hits_at_1(["", "x"], ["x"]) == 1.0  # an empty first answer is dropped before ranking


def test_linking_correct() -> None:
    assert m.linking_correct(None, "X") is None
    assert m.linking_correct(["x"], None) is None
    assert m.linking_correct([], "X") is False
    assert m.linking_correct(["The Matrix", "Y"], "matrix") is True
    assert m.linking_correct(["Y", "The Matrix"], "Matrix") is False


def test_percentiles_cost_and_means() -> None:
    assert m.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert m.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8, abs=1e-12)
    assert m.percentile([], 50) is None
    assert m.cost_per_1k([None, None]) is None
    assert m.cost_per_1k([0.0001, None, 0.0003]) == pytest.approx(0.2, abs=1e-12)
    assert m.mean_or_none([None, 1.0, 0.0]) == 0.5


def test_bootstrap_ci_is_seeded_and_exact_on_degenerate_samples() -> None:
    assert m.bootstrap_ci([]) is None
    assert m.bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert m.bootstrap_ci([1.0]) == (1.0, 1.0)
    values = [0.0, 1.0] * 50
    low, high = m.bootstrap_ci(values, seed=7)
    assert m.bootstrap_ci(values, seed=7) == (low, high)
    assert 0.35 < low < 0.5 < high < 0.65
    # two values: resample means are 0, 0.5 or 1 and all three occur in 1000 draws
    assert m.bootstrap_ci([0.0, 1.0], seed=0) == (0.0, 1.0)


def test_alternative_references_score_the_best_one_as_squad_does() -> None:
    """Gold texts that are alternatives (SQuAD's annotator spans), not an answer set to predict in full."""
    refs = ["Ann", "Ann B."]
    assert m.answer_scores(["Ann"], refs, match="token", aliases=True) == (1.0, 1.0, 1.0)
    assert m.answer_scores(["ann b"], refs, match="token", aliases=True) == (1.0, 1.0, 1.0)
    # "B" against "ann b": P = 1, R = 1/2 -> 2/3; against "ann": 0
    em, f1, hits = m.answer_scores(["B"], refs, match="token", aliases=True)
    assert (em, hits) == (0.0, 0.0) and f1 == pytest.approx(2 / 3, abs=1e-12)
    assert m.answer_scores([], refs, match="token", aliases=True) == (0.0, 0.0, 0.0)
    # as an answer set, "Ann" alone misses "Ann B.": EM 0, F1 = 2 * 1 * (5/6) / (11/6) = 10/11
    em, f1, _ = m.answer_scores(["Ann"], refs, match="token")
    assert em == 0.0 and f1 == pytest.approx(10 / 11, abs=1e-12)
