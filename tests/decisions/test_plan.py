"""The path planner: monotone word/move alignment fitted on 1- and 2-hop paths scores a 3-hop path."""

from __future__ import annotations

import numpy as np
import pytest

from graphwalk_core.decisions.plan import NULL, Planner, schema_of, sides

D, DI, Y = "directed_by (out)", "directed_by (in)", "release_year (out)"
DIRECT, DIRECTED, YEAR = ("directed_by", "out"), ("directed_by", "in"), ("release_year", "out")
COMPOSED = "when were the films directed by the director of ENTITY released"


@pytest.fixture(scope="module")
def planner() -> Planner:
    labeled = [
        ("who directed ENTITY", [D]),
        ("who is the director of ENTITY", [D]),
        ("when was ENTITY released", [Y]),
        ("which films did ENTITY direct", [DI]),
        ("which films share the director of ENTITY", [D, DI]),
        ("when were the films directed by ENTITY released", [DI, Y]),
    ]
    return Planner.fit(labeled * 2, {D: [DI], DI: [D, Y], Y: []})


def test_sides_read_outward_from_the_mention() -> None:
    assert sides("the films directed by ENTITY were in which genres") == (
        ["by", "directed", "film", "the"], ["were", "in", "which", "genre"]
    )  # fmt: skip
    assert sides("which films share directors") == ([], ["which", "film", "share", "director"])


def test_schema_is_what_was_offered_after_each_move() -> None:
    offered = [(DIRECT, [DIRECTED, None]), (DIRECTED, [YEAR, DIRECT]), (DIRECT, [YEAR])]
    assert schema_of(offered) == {D: [DI, Y], DI: [D, Y]}


def test_a_composed_question_aligns_each_move_to_its_words(planner: Planner) -> None:
    score, left, right = planner.align(COMPOSED, [D, DI, Y])
    # left, outward: of director the by directed films the were when | right: released
    assert left == [0, 0, NULL, 1, NULL, 1, NULL, 2, 2]
    assert right == [2]
    # the 3-hop path explains more than any 2-hop one; a move asked for by nothing costs, and a path
    # with more moves than words is impossible
    assert score > planner.align(COMPOSED, [DI, Y])[0] > planner.align(COMPOSED, [D, DI])[0]
    released = "when was ENTITY released"
    assert planner.align(released, [Y, D])[0] < planner.align(released, [Y])[0]
    assert planner.align("ENTITY released", [Y, D])[0] == -np.inf


def test_the_plan_walks_three_hops_it_never_saw(planner: Planner) -> None:
    def top(path: tuple[tuple[str, str], ...], options: list[tuple[str, str] | None]) -> object:
        log_p = planner.distribution(COMPOSED, path, options)
        assert log_p is not None
        assert np.exp(log_p).sum() == pytest.approx(1.0)
        return options[int(np.argmax(log_p))]

    assert top((), [DIRECT, YEAR]) == DIRECT
    assert top((DIRECT,), [DIRECTED, None]) == DIRECTED
    assert top((DIRECT, DIRECTED), [DIRECT, YEAR, None]) == YEAR
    assert top((DIRECT, DIRECTED, YEAR), [DIRECT, None]) is None
    # a 1-hop question stops after its hop
    assert planner.distribution("who directed ENTITY", (DIRECT,), [DIRECTED, None])[1] > np.log(0.99)


def test_abstains_on_a_move_it_never_saw(planner: Planner) -> None:
    assert planner.distribution(COMPOSED, (), [DIRECT, ("has_genre", "out")]) is None
    assert planner.distribution(COMPOSED, (("has_genre", "out"),), [DIRECTED, None]) is None


def test_continuations_follow_the_schema(planner: Planner) -> None:
    assert planner.continuations((D,)) == [(D,), (D, DI), (D, DI, D), (D, DI, Y)]


def test_save_load_round_trip(planner: Planner) -> None:
    again = Planner.from_saved(planner.manifest(), planner.arrays())
    assert again.manifest() == planner.manifest()
    assert again.align(COMPOSED, [D, DI, Y]) == planner.align(COMPOSED, [D, DI, Y])


def test_batched_scores_equal_the_alignment_less_the_move_cost(planner: Planner) -> None:
    paths = [(D,), (D, DI), (DI, Y), (D, DI, Y), (D, DI, D), ()]
    expected = [planner.align(COMPOSED, p)[0] - planner.move_cost * len(p) for p in paths]
    np.testing.assert_allclose(planner.scores(COMPOSED, paths), expected)
