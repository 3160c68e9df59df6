"""The passage graph's linking, graph-ppr and the typed-path ranker on a four-passage graph."""

from __future__ import annotations

import numpy as np
import pytest

from graphwalk_core.errors import InputError
from graphwalk_core.ranking.base import PathStep
from graphwalk_core.ranking.dense import DenseRanker
from graphwalk_core.ranking.lexical import BM25Index
from graphwalk_core.ranking.passage_graph import Entity, PassageGraph, Relation, title_forms
from graphwalk_core.ranking.ppr import PPRProfile, PPRRanker
from graphwalk_core.ranking.typed_path import TypedPathProfile, TypedPathRanker

IDS = ["Blood Street", "Leo Fong", "Kung Fu Zombie", "Director (magazine)"]
ENTITIES = [
    Entity("e-bs", "Blood Street", (), ("Blood Street",)),
    Entity("e-lf", "Leo Fong", (), ("Blood Street", "Leo Fong")),
    Entity("e-us", "American", (), ("Leo Fong", "Kung Fu Zombie")),
    Entity("e-dir", "Director", (), ("Director (magazine)",)),
]
QUESTION = "What nationality is the director of film Blood Street?"


def _graph() -> PassageGraph:
    return PassageGraph(IDS, IDS, ENTITIES, [Relation("e-bs", "co_occurs_with", "e-lf")])


class Lexical:
    """A fixed lexical base: these passages, best first."""

    def __init__(self, hits: list[tuple[int, float]]) -> None:
        self.hits = hits

    def top(self, text: str, k: int) -> list[tuple[int, float]]:
        return self.hits[:k]


def _profile(**fields: object) -> TypedPathProfile:
    return TypedPathProfile(name="test/lexical", seed_mode="lexical", **fields)  # type: ignore[arg-type]


def test_title_forms_and_links() -> None:
    assert title_forms("Director (magazine)") == ("Director (magazine)", "Director")
    assert title_forms("Leo Fong") == ("Leo Fong",)
    g = _graph()
    # a passage is "about" the entity named like its title (bare name too), else it "mentions" it
    # entity nodes follow the passages in id order: e-bs 4, e-dir 5, e-lf 6, e-us 7
    assert g.links == [(0, 4, "about"), (0, 6, "mentions"), (1, 6, "about"), (1, 7, "mentions"),
                       (2, 7, "mentions"), (3, 5, "about")]  # fmt: skip
    assert g.relations == [(4, "co_occurs_with", 6)]


def test_linking_needs_a_capitalized_content_word() -> None:
    (mention,) = _graph().link(QUESTION)  # "director" in lower case is a word, not the entity "Director"
    assert (mention.text, mention.passages, mention.entities) == ("blood street", (0,), (4,))
    (mention,) = _graph().link("Which Director won?")
    assert (mention.text, mention.passages, mention.entities) == ("director", (3,), (5,))
    assert _graph().link("what of the") == []


def test_ppr_ranks_the_bridge_passage_second_and_needs_a_seed() -> None:
    ranker = PPRRanker(_graph())
    result = ranker.rank(QUESTION, 3)
    assert result.profile == "graph-ppr/v1"
    assert result.passage_ids == ["Blood Street", "Leo Fong", "Kung Fu Zombie"]
    assert result.seeds == {"mentions": ["blood street"], "dense": []}
    assert result.stop_reasons == [] and result.coverage["residual"] <= 1e-8
    assert result.hits[0].score > result.hits[1].score > result.hits[2].score > 0
    empty = ranker.rank("what is it?", 3)
    assert (empty.hits, empty.stop_reasons) == ([], ["empty_seed"])


def test_ppr_dense_seeds_alone_when_nothing_links() -> None:
    class Dense:
        def similarities(self, text: str) -> np.ndarray:
            return np.array([0.1, 0.2, 0.9, 0.0])

    result = PPRRanker(_graph(), Dense()).rank("what is it?", 2)
    assert result.passage_ids[0] == "Kung Fu Zombie"
    assert result.seeds["dense"][:2] == ["Kung Fu Zombie", "Leo Fong"]


def test_typed_path_strongest_path_scores_and_proof() -> None:
    ranker = TypedPathRanker(_graph(), profile=_profile(), lexical=Lexical([(0, 2.0)]))
    result = ranker.rank(QUESTION, 5)
    assert result.profile == "test/lexical"
    assert result.passage_ids == ["Blood Street", "Leo Fong", "Kung Fu Zombie"]
    top, bridge, far = result.hits
    assert (top.score, top.base_rank, top.graph_rank, top.path) == (pytest.approx(1 / 3), 1, 1, [])
    # 1/3 (anchor rank 1) * (0.5 * 0.8 mentions) * (0.5 * 1.0 about): the co-occurrence detour is weaker
    # (1/3 * 0.5 * 0.4 via the edge) and max, not sum, keeps the strongest path only
    assert bridge.strength == pytest.approx(1 / 3 * 0.4 * 0.5)
    assert (bridge.score, bridge.base_rank, bridge.graph_rank) == (pytest.approx(0.75 / 4), None, 2)
    assert bridge.path == [
        PathStep(source="Blood Street", relation="mentions", target="e-lf", direction="out"),
        PathStep(source="e-lf", relation="about", target="Leo Fong", direction="in"),
    ]
    assert (bridge.anchor, bridge.anchor_rank) == ("Blood Street", 1)
    assert far.score == pytest.approx(0.75 / 5) and len(far.path) == 4
    assert result.stop_reasons == [] and result.coverage["complete"] is True


def test_typed_path_bounds_say_why_they_stopped() -> None:
    g = _graph()
    cut = TypedPathRanker(g, profile=_profile(max_relaxations=2), lexical=Lexical([(0, 2.0)])).rank(
        QUESTION, 5
    )
    assert (cut.stop_reasons, cut.coverage["relaxations"], cut.coverage["complete"]) == (
        ["edge_budget"],
        2,
        False,
    )
    shallow = TypedPathRanker(g, profile=_profile(max_depth=1), lexical=Lexical([(0, 2.0)])).rank(QUESTION, 5)
    assert shallow.stop_reasons == ["depth_limit"] and shallow.passage_ids == ["Blood Street"]


def test_typed_path_empty_seed_gives_an_empty_result() -> None:
    result = TypedPathRanker(_graph(), profile=_profile(), lexical=Lexical([])).rank(QUESTION, 5)
    assert (result.hits, result.stop_reasons) == ([], ["empty_seed"])


def test_typed_path_profiles_are_pinned() -> None:
    with pytest.raises(InputError, match="unknown typed-path profile 'latest'"):
        TypedPathRanker(_graph(), profile="latest", lexical=Lexical([]))
    with pytest.raises(InputError, match="needs a dense scorer"):
        TypedPathRanker(_graph(), profile="typed-path/v1-hybrid", lexical=Lexical([]))


class TiedScorer:
    """One passage scores 1, the other 99 tie at 0.5 (ties straddle the top-k cut)."""

    def similarities(self, text: str) -> np.ndarray:
        scores = np.full(100, 0.5)
        scores[50] = 1.0
        return scores


def test_rankers_break_ties_at_the_cut_by_corpus_order() -> None:
    ranker = DenseRanker([f"p{i}" for i in range(100)], TiedScorer())
    assert ranker.rank("q", 3).passage_ids == ["p50", "p0", "p1"]
    index = BM25Index(["alpha beta"] * 40 + ["alpha"] + ["gamma"] * 9)
    assert [i for i, _ in index.top("alpha beta", 3)] == [0, 1, 2]
    assert [i for i, _ in index.top("gamma", 20)] == list(range(41, 50))


def test_ppr_walk_seeds_pull_the_walked_passages_up_and_weight_zero_ignores_them() -> None:
    walk = ["Director (magazine)", "not a passage", "Kung Fu Zombie"]
    plain = PPRRanker(_graph()).rank(QUESTION, 4, walk=walk)
    assert plain.passage_ids == ["Blood Street", "Leo Fong", "Kung Fu Zombie"]  # walk_weight 0: as v1
    assert plain.seeds == {"mentions": ["blood street"], "dense": []}
    seeded = PPRRanker(_graph(), profile=PPRProfile(name="t/walk", walk_weight=0.5, walk_k=2))
    result = seeded.rank(QUESTION, 4, walk=walk)
    assert result.passage_ids == ["Blood Street", "Director (magazine)", "Kung Fu Zombie", "Leo Fong"]
    assert result.seeds["walk"] == ["Director (magazine)", "Kung Fu Zombie"]  # unknown ids dropped, first 2
    # no linked mention: the walk alone seeds the ranking (mass spreads from Kung Fu Zombie onwards)
    alone = seeded.rank("what of the", 4, walk=walk).passage_ids
    assert alone == ["Director (magazine)", "Kung Fu Zombie", "Leo Fong", "Blood Street"]


def test_linking_folds_names_as_the_name_index_does() -> None:
    # "İ" case-folds to "i" + a combining dot, which splits the word: the question must be split the same
    g = PassageGraph(["p"], ["Aziz Efendi"], [Entity("e-ist", "İstanbul", (), ("p",))])
    (mention,) = g.link("Who was born in İstanbul?")
    assert (mention.text, mention.passages, mention.entities) == ("i stanbul", (), (1,))


def test_names_in_scripts_without_case_link() -> None:
    # only a lower-case start marks a plain word: CJK has no case, "ʻ" (the ʻokina) starts Hawaiian names
    g = PassageGraph(["p"], ["ʻElisiva Fusipala"], [Entity("e-tk", "東京", (), ("p",))])
    assert [(m.text, m.passages, m.entities) for m in g.link("Was ʻElisiva Fusipala born in 東京?")] == [
        ("ʻelisiva fusipala", (0,), ()),
        ("東京", (), (1,)),
    ]
    assert g.link("was ʻelisiva fusipala born?") == []  # still: a lower-case start is a word


def test_typed_path_equal_paths_keep_the_smaller_steps_also_from_one_node() -> None:
    # X reaches V twice at equal strength (two relations of one weight): the documented tie rule keeps the
    # lexicographically smaller steps, ("alpha", "in") before ("zeta", "out"), as between two parents
    entities = [Entity("x", "Xeno", (), ("p0",)), Entity("v", "Vela", (), ("p1",))]
    relations = [Relation("x", "zeta", "v"), Relation("v", "alpha", "x")]
    g = PassageGraph(["p0", "p1"], ["P zero", "P one"], entities, relations)
    ranker = TypedPathRanker(g, profile=_profile(), lexical=Lexical([(0, 1.0)]))
    (hit,) = [h for h in ranker.rank("q", 5).hits if h.passage_id == "p1"]
    assert [(s.source, s.relation, s.target, s.direction) for s in hit.path] == [
        ("p0", "mentions", "x", "out"),
        ("x", "alpha", "v", "in"),  # V -[alpha]-> X, walked backwards
        ("v", "mentions", "p1", "in"),
    ]


def test_bm25_over_passages_without_a_term_scores_nothing() -> None:
    # no passage holds an indexable term (empty, stopwords, one-letter words): no hit, not bm25s's ValueError
    for texts in ([], [""], ["the of", "a b"]):
        index = BM25Index(texts)
        assert (index.scores("the alpha").tolist(), index.top("the alpha", 3)) == ([0.0] * len(texts), [])


def test_typed_path_paths_stay_within_max_depth() -> None:
    # depth 2 reaches P (via about, about) and Z (weakly, via Y's co-occurrence); at depth 3 P strengthens
    # Z, which must wait for depth 4 to expand: Q is four steps from the anchors, past max_depth 3
    ids, titles = ["a1", "a2", "p", "q"], ["Xeno", "A two", "Xeno (film)", "Q"]
    entities = [
        Entity("x", "Xeno", (), ("a1", "p")),
        Entity("y", "Yak", (), ("a2",)),
        Entity("z", "Zed", (), ("p", "q")),
    ]
    g = PassageGraph(ids, titles, entities, [Relation("y", "co_occurs_with", "z")])
    lexical = Lexical([(0, 2.0), (1, 1.0)])
    shallow = TypedPathRanker(g, profile=_profile(anchors=2, max_depth=3), lexical=lexical).rank("q", 5)
    assert (shallow.passage_ids, shallow.stop_reasons) == (["a1", "a2", "p"], ["depth_limit"])
    deep = TypedPathRanker(g, profile=_profile(anchors=2, max_depth=4), lexical=lexical).rank("q", 5)
    (q,) = [h for h in deep.hits if h.passage_id == "q"]
    assert [s.target for s in q.path] == ["x", "p", "z", "q"]


def test_linking_matches_decomposed_accents() -> None:
    # "é" typed as "e" + a combining accent (NFD, as text copied from a PDF or a macOS file name may be)
    g = PassageGraph(["p"], ["Beyonce\u0301"], [Entity("e-b", "Beyoncé", (), ("p",))])
    (mention,) = g.link("Who is Beyonce\u0301?")
    assert (mention.text, mention.passages, mention.entities) == ("beyoncé", (0,), (1,))
