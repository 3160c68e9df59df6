"""Entry resolution: brackets, whole-word mentions, IDF fuzzy words, embeddings and one-call choice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import InputError
from graphwalk_core.model import Node
from graphwalk_core.stores.base import upsert_many
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.sql import SQLGraphStore
from graphwalk_core.traversal.ask import start_nodes
from graphwalk_core.traversal.entry import ChoiceEntryResolver, NameEntryResolver, NameIndex

from .conftest import graph, printed_by_hash_seed


async def test_bracketed_spans_resolve_exactly(movies: MemoryGraphStore) -> None:
    resolver = NameEntryResolver(movies)  # a bracketed question is resolved without the index
    assert await resolver.resolve("who directed [Titanic]") == ["Titanic"]
    await resolver.ensure_index()
    assert resolver.candidates("who directed [Titanic]")[0].how == "bracket"
    with pytest.raises(InputError, match=r"\[Titanc\] is not a node name"):
        await resolver.resolve("who directed [Titanc]")


class NoNodeModels(MemoryGraphStore):
    """A store whose every node model read is an error."""

    def iter_nodes(self, *, batch_size: int = 1000) -> AsyncIterator[Node]:
        raise AssertionError("the whole graph was read as models")


class NoWholeGraph(NoNodeModels):
    """A store whose every node read is an error: what is resolved over it reads no whole-graph index."""

    def node_labels(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        raise AssertionError("the whole graph was read")


async def test_bracketed_questions_build_no_name_index(tmp_path: Path) -> None:
    """A bracketed question over a store is resolved by id and name lookups, as over the built index:
    exact case, aliases, an id, a padded span, a name two nodes share; an unknown span raises alike."""
    nodes = [Node(id="n1", type="person", name="Christopher Nolan", aliases=["Chris Nolan"]),
             Node(id="n2", type="tag", name="christopher nolan"), Node(id="n3", type="film", name="Memento"),
             Node(id="n0", type="film", name="Memento")]  # fmt: skip
    memory, sql = NoWholeGraph(), SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    for store in (memory, sql):
        await upsert_many(store, nodes, [])
    index = NameIndex()
    for node in sorted(nodes, key=lambda n: n.id):  # as NameIndex.build reads a store
        index.add(node.id, node.name, node.aliases)
    index.finish()
    questions = ["who is [Christopher Nolan]", "films by [Chris Nolan]", "what is [n2]",
                 "when was [ Memento ]", "is [Memento] older than [christopher nolan]"]  # fmt: skip
    expected = [[("n1", "Christopher Nolan")], [("n1", "Christopher Nolan")], [("n2", "christopher nolan")],
                [("n0", "Memento"), ("n3", "Memento")], [("n0", "Memento"), ("n3", "Memento"),
                 ("n2", "christopher nolan")]]  # fmt: skip
    for store in (index, memory, sql):
        resolver = NameEntryResolver(store, embedder=HashingEmbedder())
        links = [await resolver.link(question) for question in questions]
        assert [[(c.node_id, c.name) for c in found] for found in links] == expected
        with pytest.raises(InputError, match=r"\[Nolan\] is not a node name"):
            await resolver.link("who is [Nolan]")
    await sql.close()


async def test_start_names_build_no_name_index(tmp_path: Path) -> None:
    """Start nodes given by id, exact name or alias are found without the whole graph's index, as with it
    (id order, exact case); a start that names nothing still gets close names from the graph."""
    nodes = [Node(id="n2", type="person", name="Christopher Nolan", aliases=("Chris Nolan",)),
             Node(id="n1", type="person", name="Christopher Nolan"),
             Node(id="n3", type="tag", name="nolan")]  # fmt: skip
    memory = NoWholeGraph()
    await upsert_many(memory, nodes, [])
    starts = ["Christopher Nolan", "Chris Nolan", "n3", "nolan"]
    assert await start_nodes(memory, starts) == ["n1", "n2", "n3"]
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    await upsert_many(sql, nodes, [])
    assert await start_nodes(sql, starts) == ["n1", "n2", "n3"]
    with pytest.raises(
        InputError,
        match=r"^start node not in the graph: 'Chris Nolen' \(did you mean: Christopher Nolan\?\)$",
    ):
        await start_nodes(sql, ["n1", "Chris Nolen"])
    await sql.close()


async def test_name_index_builds_no_node_models(tmp_path: Path) -> None:
    """Over a memory store the index reads names and aliases without node models (iter_nodes: ~1 s of
    pydantic on the MetaQA KB), and is the index a SQL store's nodes give."""
    nodes = [Node(id="n1", type="person", name="Christopher Nolan", aliases=("Chris Nolan",))]
    memory = NoNodeModels.from_triples([("Memento", "directed_by", "n1")], source_id="test")
    await memory.upsert_node(nodes[0])
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'g.sqlite'}")
    await upsert_many(sql, [*nodes, Node(id="Memento", type="entity", name="Memento")], [])
    built = [await NameIndex.build(store) for store in (memory, sql)]
    assert [(dict(i.by_exact), i.names, i.idf) for i in built] == 2 * [
        ({"Christopher Nolan": ["n1"], "Chris Nolan": ["n1"], "Memento": ["Memento"]},
         {"Memento": "Memento", "n1": "Christopher Nolan"}, built[0].idf)]  # fmt: skip
    await sql.close()


async def test_whole_word_mentions_longest_first(movies: MemoryGraphStore) -> None:
    resolver = await NameEntryResolver.from_store(movies)
    assert await resolver.resolve("films with leonardo dicaprio and Kate Winslet") == [
        "Leonardo DiCaprio",
        "Kate Winslet",
    ]
    # "Avatar" inside "Avatars" is not a whole-word mention
    assert resolver.mentions("Avatars of the year") == []
    store = graph([("New York", "in", "USA"), ("New York City", "in", "New York"), ("The", "r", "Who")])
    resolver = await NameEntryResolver.from_store(store)
    assert await resolver.resolve("films set in new york city") == ["New York City"]
    # stopword-only names ("The", "Who") are never mentions
    assert resolver.mentions("who directed the film") == []


async def test_mentions_match_whatever_the_accents_normal_form() -> None:
    store = graph([("Beyonce\u0301", "born_in", "Houston"), ("Anne\u0301e", "r", "Zoe")])  # names in NFD
    resolver = await NameEntryResolver.from_store(store)
    assert await resolver.resolve("Where was Beyoncé born in the Année?") == ["Beyonce\u0301", "Anne\u0301e"]


async def test_exact_case_names_rank_first() -> None:
    store = graph(
        [("Memento", "directed_by", "Christopher Nolan"), ("Memento", "has_tags", "christopher nolan")]
    )
    resolver = await NameEntryResolver.from_store(store)
    assert await resolver.resolve("what did Christopher Nolan direct") == [
        "Christopher Nolan",
        "christopher nolan",
    ]
    assert await resolver.resolve("what is tagged christopher nolan") == [
        "christopher nolan",
        "Christopher Nolan",
    ]
    best = NameEntryResolver(resolver.index, best_only=True)
    assert await best.resolve("what did Christopher Nolan direct") == ["Christopher Nolan"]


async def test_fuzzy_name_words_weighted_by_idf(movies: MemoryGraphStore) -> None:
    resolver = await NameEntryResolver.from_store(movies)
    found = resolver.candidates("films by Alejandro Inarritu")
    assert [(c.node_id, c.how) for c in found] == [("Alejandro G. Inarritu", "fuzzy")]
    assert found[0].score == pytest.approx(2 / 3, abs=1e-12)  # 2 of 3 equally rare name words
    assert await resolver.resolve("films by Alejandro Inarritu") == ["Alejandro G. Inarritu"]


def test_fuzzy_scores_alike_under_every_hash_seed() -> None:
    # a name's IDF weights were summed over a set of its words, in an order PYTHONHASHSEED changes: a name
    # all of whose words the question holds scored 1.0000000000000002 under some seeds, so it was linked
    # ahead of the tie's lowest id, and which name that was depended on the seed
    program = """
from graphwalk_core.traversal.entry import NameEntryResolver, NameIndex
index = NameIndex()
words = "red green blue amber ochre teal plum rust".split()
for i in range(len(words)):  # word k is in 2 * (k + 1) names: eight IDFs
    index.add(f"n{i}", " ".join(words[i:]))
    index.add(f"m{i}", " ".join(reversed(words[i:])))
index.finish()
found = NameEntryResolver(index, max_candidates=3).fuzzy(" ".join(words))
print([(c.node_id, c.score) for c in found])
"""
    assert printed_by_hash_seed(program) == {"[('m0', 1.0), ('m1', 1.0), ('m2', 1.0)]\n"}


async def test_embedding_fallback(movies: MemoryGraphStore) -> None:
    plain = await NameEntryResolver.from_store(movies)
    assert await plain.resolve("who made Inceptoin") == []
    resolver = NameEntryResolver(plain.index, embedder=HashingEmbedder())
    found = resolver.candidates("who made Inceptoin")
    assert found[0].how == "embedding"
    assert await resolver.resolve("who made Inceptoin") == ["Inception"]


class KeepsNames(HashingEmbedder):
    """A HashingEmbedder with a cache of its own, like FastEmbedEmbedder: records what passes it by."""

    def __init__(self) -> None:
        super().__init__()
        self.uncached: list[str] = []
        self.cached: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.cached += texts
        return super().embed(texts)

    def embed_uncached(self, texts: Sequence[str]) -> np.ndarray:
        self.uncached += texts
        return super().embed(texts)


async def test_embedding_tier_embeds_names_through_the_disk_cache(movies: MemoryGraphStore) -> None:
    """The node names go through ``embed_uncached`` (the rows a FastEmbedEmbedder keeps in its disk cache
    across runs), the question through ``embed``; the answer is the plain embedder's."""
    index = (await NameEntryResolver.from_store(movies)).index
    embedder = KeepsNames()
    found = NameEntryResolver(index, embedder=embedder).embedding("who made Inceptoin")
    assert embedder.uncached == [index.names[n] for n in sorted(index.names)]
    assert embedder.cached == ["who made Inceptoin"]
    plain = NameEntryResolver(index, embedder=HashingEmbedder()).embedding("who made Inceptoin")
    assert found == plain


async def test_choice_resolver_spends_one_call(movies: MemoryGraphStore, tmp_path: Path) -> None:
    names = await NameEntryResolver.from_store(movies)
    decider = FakeDecisionBackend(script=lambda q, s: {k: 1.0 if k == "c2" else 0.0 for k in q.options})
    resolver = ChoiceEntryResolver(movies, decider, names)
    assert await resolver.resolve("is Titanic or Avatar older") == ["Avatar"]
    question = decider.requests[0].questions[0]
    assert list(question.options) == ["c1", "c2"]
    assert question.options["c2"] == {
        "name": "Avatar", "type": "film",
        "relations": [  # by relation (the file lists release_year before has_genre)
            "directed_by (out) James Cameron", "has_genre (out) Science Fiction", "release_year (out) 2009",
        ],
    }  # fmt: skip
    sql = SQLGraphStore(f"sqlite:///{tmp_path / 'movies.sqlite'}")  # the same cards from a SQL store
    await upsert_many(sql, [n async for n in movies.iter_nodes()], [e async for e in movies.iter_edges()])
    on_sql = FakeDecisionBackend(script=decider.script)
    assert await ChoiceEntryResolver(sql, on_sql, names).resolve("is Titanic or Avatar older") == ["Avatar"]
    assert on_sql.requests[0].questions[0].options == question.options
    await sql.close()
    # one candidate: no call
    assert await resolver.resolve("who directed Memento") == ["Memento"]
    assert decider.calls == 1


async def test_links_say_how_each_start_was_found(movies: MemoryGraphStore) -> None:
    """``link`` gives each start node once, with its tier and score, and ``explain`` says it for people."""
    names = NameEntryResolver((await NameEntryResolver.from_store(movies)).index, embedder=HashingEmbedder())
    cases = {
        "who directed [Titanic]": "Titanic: [Titanic] in the question",
        "films with leonardo dicaprio": 'Leonardo DiCaprio: named in the question: "leonardo dicaprio"',
        "films by Alejandro Inarritu": "Alejandro G. Inarritu: rare name words in the question, score 0.67",
        "who made Inceptoin": "Inception: nearest name by embedding, similarity 0.37",
    }
    for question, said in cases.items():
        assert [f"{c.name}: {c.explain()}" for c in await names.link(question)] == [said]
    assert [(c.node_id, c.how, c.score) for c in await names.link("is [Titanic] older than Titanic")] == [
        ("Titanic", "bracket", 1.0)
    ]
    decider = FakeDecisionBackend(script=lambda q, s: {k: 0.8 if k == "c2" else 0.2 for k in q.options})
    chosen = await ChoiceEntryResolver(movies, decider, names).link("is Titanic or Avatar older")
    assert [(c.node_id, c.how, c.score, c.mention) for c in chosen] == [("Avatar", "choice", 0.8, "avatar")]
    assert chosen[0].explain() == "chosen by the decider among the name candidates, p=0.80"
