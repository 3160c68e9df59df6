"""Entry resolution: which graph node(s) a question starts from.

``NameEntryResolver`` finds ``[bracketed]`` spans (exact), then whole-word name/alias mentions (longest
first, stopword-only mentions ignored), then IDF-weighted fuzzy name-word candidates, then (optional)
embedding similarity. ``ChoiceEntryResolver`` spends one decision to pick among up to 8 candidates.
"""

from __future__ import annotations

import asyncio
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel

from graphwalk_core.decisions.base import (
    ChoiceQuestion,
    DecisionBackend,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    normalize_distribution,
    top_label,
)
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.pool import names_embedding
from graphwalk_core.errors import InputError
from graphwalk_core.model import Node, NodeId
from graphwalk_core.stores.base import GraphStore, first_adjacent, node_labels

_WORD = re.compile(r"\w+")
_BRACKET = re.compile(r"\[([^\]]+)\]")
#: Longest name (in words) the mention scan looks for.
MAX_NAME_WORDS = 12
#: Name words on more nodes than this do not open the fuzzy candidate pool.
MAX_WORD_FANOUT = 200

_STOPWORD_TEXT = (
    "a an the of in on at to for from by with and or but is are was were be been being do does did "
    "what which who whom whose when where why how that this these those it its as into about than then "
    "there their they them he she his her him i me my we our you your can could would should will shall "
    "may might must has have had not no yes so if also all any some many much more most other such "
    "movie movies film films"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split(" "))

How = Literal["bracket", "mention", "fuzzy", "embedding", "choice"]


class EntryCandidate(BaseModel):
    node_id: NodeId
    name: str
    score: float
    how: How
    mention: str | None = None

    def explain(self) -> str:
        """How this start was found, for people: the tier and its score."""
        if self.how == "bracket":
            return f"[{self.mention}] in the question"
        if self.how == "mention":
            return f'named in the question: "{self.mention}"'
        if self.how == "fuzzy":
            return f"rare name words in the question, score {self.score:.2f}"
        if self.how == "embedding":
            return f"nearest name by embedding, similarity {self.score:.2f}"
        return f"chosen by the decider among the name candidates, p={self.score:.2f}"


def unique_nodes(found: Sequence[EntryCandidate]) -> list[EntryCandidate]:
    """The first candidate of each node, in order."""
    first: dict[NodeId, EntryCandidate] = {}
    for c in found:
        first.setdefault(c.node_id, c)
    return list(first.values())


def bracketed(span: str, nodes: Sequence[tuple[NodeId, str]]) -> list[EntryCandidate]:
    """The candidates of ``[span]``: its (id, name) ``nodes``; none is an InputError."""
    if not nodes:
        raise InputError(f"bracketed entity [{span}] is not a node name in the graph")
    return [EntryCandidate(node_id=i, name=name, score=1.0, how="bracket", mention=span) for i, name in nodes]


async def exactly_named(store: GraphStore, label: str) -> list[Node]:
    """The nodes whose name or an alias is ``label`` exactly (the index's ``by_exact``), by id."""
    return [node for node in await store.find_nodes(name=label) if label in (node.name, *node.aliases)]


def words(text: str) -> list[str]:
    """Case-folded word tokens of ``text`` in NFC (the unit of whole-word matching): ``"e\u0301"``, an
    ``e`` and a combining accent, is the one letter ``"é"``, not ``e`` and a word break."""
    return _WORD.findall(unicodedata.normalize("NFC", text).casefold())


class EntryResolver(Protocol):
    async def link(self, question: str) -> list[EntryCandidate]:
        """The question's start nodes, best first, each with how it was found."""
        ...

    async def resolve(self, question: str) -> list[NodeId]:
        """The ids of :meth:`link`."""
        return [c.node_id for c in await self.link(question)]


class NameIndex:
    """Name lookup tables built once per graph: word tuples, word -> nodes, IDF, display names."""

    def __init__(self) -> None:
        self.by_words: dict[tuple[str, ...], list[NodeId]] = defaultdict(list)
        self.by_word: dict[str, set[NodeId]] = defaultdict(set)
        self.name_words: dict[NodeId, tuple[str, ...]] = {}
        self.names: dict[NodeId, str] = {}
        self.by_exact: dict[str, list[NodeId]] = defaultdict(list)
        self.idf: dict[str, float] = {}

    @classmethod
    async def build(cls, store: GraphStore) -> NameIndex:
        index = cls()
        async for node_id, name, aliases in node_labels(store):
            index.add(node_id, name, aliases)
        index.finish()
        return index

    def add(self, node_id: NodeId, name: str, aliases: Sequence[str] = ()) -> None:
        self.names[node_id] = name
        self.name_words[node_id] = tuple(words(name))
        for label in (name, *aliases):
            self.by_exact[label].append(node_id)
            toks = tuple(words(label))
            if toks and len(toks) <= MAX_NAME_WORDS:
                self.by_words[toks].append(node_id)
            for w in toks:
                self.by_word[w].add(node_id)

    def finish(self) -> None:
        n = max(len(self.names), 1)
        self.idf = {w: math.log(1 + n / len(ids)) for w, ids in self.by_word.items()}


class NameEntryResolver(EntryResolver):
    """Bracketed spans, whole-word mentions, IDF-weighted fuzzy words, then an optional embedding.

    Give it a built :class:`NameIndex`, or a store whose index is built on the first ``resolve`` of a
    question without brackets (a bracketed one is looked up in the store: :meth:`stored_brackets`).
    """

    def __init__(
        self,
        source: NameIndex | GraphStore,
        *,
        embedder: Embedder | None = None,
        best_only: bool = False,
        max_candidates: int = 8,
        min_fuzzy: float = 0.5,
    ) -> None:
        self._index = source if isinstance(source, NameIndex) else None
        self._store = None if isinstance(source, NameIndex) else source
        self.embedder = embedder
        self.best_only = best_only
        self.max_candidates = max_candidates
        self.min_fuzzy = min_fuzzy
        self._matrix: np.ndarray | None = None
        self._matrix_ids: list[NodeId] = []
        self._build_lock = asyncio.Lock()

    @classmethod
    async def from_store(cls, store: GraphStore, **kwargs: object) -> NameEntryResolver:
        return cls(await NameIndex.build(store), **kwargs)  # type: ignore[arg-type]

    @property
    def index(self) -> NameIndex:
        if self._index is None:
            raise RuntimeError("the name index is not built yet: await ensure_index() first")
        return self._index

    async def ensure_index(self) -> NameIndex:
        """Build the index from the store once (a no-op when it was given); concurrent callers wait."""
        async with self._build_lock:
            if self._index is None:
                assert self._store is not None
                self._index = await NameIndex.build(self._store)
        return self._index

    def brackets(self, question: str) -> list[EntryCandidate]:
        """``[bracketed]`` spans resolved exactly (id, then name/alias); unknown spans raise."""
        out = []
        for span in _BRACKET.findall(question):
            ids = [span] if span in self.index.names else self.index.by_exact.get(span.strip(), [])
            out += bracketed(span, [(i, self.index.names[i]) for i in ids])
        return out

    async def stored_brackets(self, question: str) -> list[EntryCandidate]:
        """:meth:`brackets` read from the store by id and by name, without the whole graph's index."""
        assert self._store is not None
        out = []
        for span in _BRACKET.findall(question):
            by_id = list((await self._store.get_nodes([span])).values())
            nodes = by_id or await exactly_named(self._store, span.strip())
            out += bracketed(span, [(node.id, node.name) for node in nodes])
        return out

    def mentions(self, question: str) -> list[EntryCandidate]:
        """Whole-word name/alias mentions, longest first and non-overlapping; exact-case names first."""
        toks = words(question)
        found: list[tuple[int, int, list[NodeId]]] = []
        for i in range(len(toks)):
            for length in range(min(MAX_NAME_WORDS, len(toks) - i), 0, -1):
                key = tuple(toks[i : i + length])
                ids = self.index.by_words.get(key)
                if ids and not all(w in STOPWORDS for w in key):
                    found.append((i, length, ids))
                    break
        found.sort(key=lambda f: (-f[1], f[0]))
        taken: set[int] = set()
        out: list[EntryCandidate] = []
        for i, length, ids in found:
            span = set(range(i, i + length))
            if span & taken:
                continue
            taken |= span
            ranked = sorted(ids, key=lambda n: (self.index.names[n] not in question, n))
            out += [EntryCandidate(node_id=n, name=self.index.names[n], score=float(length), how="mention",
                                   mention=" ".join(toks[i : i + length])) for n in ranked]  # fmt: skip
        return out

    def fuzzy(self, question: str) -> list[EntryCandidate]:
        """Nodes sharing rare words with the question, scored by IDF-weighted name coverage."""
        qwords = {w for w in words(question) if w not in STOPWORDS}
        idf = self.index.idf
        pool: set[NodeId] = set()
        for w in qwords:
            ids = self.index.by_word.get(w, ())
            if 0 < len(ids) <= MAX_WORD_FANOUT:
                pool |= ids
        scored = []
        for n in pool:
            nw = set(self.index.name_words[n])
            total = math.fsum(idf.get(w, 0.0) for w in nw)  # exactly rounded: the same in any set order
            if total > 0:
                scored.append((math.fsum(idf.get(w, 0.0) for w in nw & qwords) / total, n))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [EntryCandidate(node_id=n, name=self.index.names[n], score=s, how="fuzzy")
                for s, n in scored[: self.max_candidates] if s >= self.min_fuzzy]  # fmt: skip

    def embedding(self, question: str) -> list[EntryCandidate]:
        """Nearest node names to the question (matrix built on first use; the names through the
        embedder's disk cache when it has one, so a later process reads them instead of embedding them)."""
        if self.embedder is None or not self.index.names:
            return []
        if self._matrix is None:
            self._matrix_ids = sorted(self.index.names)
            names = [self.index.names[n] for n in self._matrix_ids]
            self._matrix = names_embedding(self.embedder)(names)
        sims = self._matrix @ self.embedder.embed([question])[0]
        order = np.argsort(-sims, kind="stable")[: self.max_candidates]
        return [EntryCandidate(node_id=self._matrix_ids[i], name=self.index.names[self._matrix_ids[i]],
                               score=float(sims[i]), how="embedding") for i in order]  # fmt: skip

    def candidates(self, question: str) -> list[EntryCandidate]:
        """The first non-empty tier: brackets, mentions, fuzzy words, embedding."""
        for tier in (self.brackets, self.mentions, self.fuzzy, self.embedding):
            found = tier(question)
            if found:
                return found
        return []

    async def link(self, question: str) -> list[EntryCandidate]:
        """Start nodes (one candidate each, best first); ``best_only`` keeps the top one. A bracketed
        question over a store whose index is not built yet is resolved from the store (no index built)."""
        if self._index is None and _BRACKET.search(question):
            found = await self.stored_brackets(question)
        else:
            await self.ensure_index()
            found = self.candidates(question)
        if found and found[0].how in ("fuzzy", "embedding"):
            found = found[:1]
        links = unique_nodes(found)
        return links[:1] if self.best_only else links


class ChoiceEntryResolver(EntryResolver):
    """One decision call picks the start node among up to ``max_candidates`` name candidates."""

    def __init__(
        self,
        store: GraphStore,
        decider: DecisionBackend,
        names: NameEntryResolver,
        *,
        max_candidates: int = 8,
        relations_shown: int = 4,
    ) -> None:
        self.store = store
        self.decider = decider
        self.names = names
        self.max_candidates = max_candidates
        self.relations_shown = relations_shown
        self.last_response: DecisionResponse | None = None

    async def _card(self, node_id: NodeId) -> dict[str, object]:
        node = await self.store.get_node(node_id)
        assert node is not None
        adjacent = await first_adjacent(self.store, node_id, self.relations_shown)
        others = await self.store.get_nodes([a.neighbor for a in adjacent])
        relations = [
            f"{a.relation} ({a.direction}) {others[a.neighbor].name if a.neighbor in others else a.neighbor}"
            for a in adjacent
        ]
        card: dict[str, object] = {"name": node.name, "type": node.type, "relations": relations}
        if node.summary:
            card["summary"] = node.summary
        return card

    async def link(self, question: str) -> list[EntryCandidate]:
        """The decider's pick among the name candidates (how="choice", score: its probability); a lone
        candidate is returned as found, without a call."""
        self.last_response = None
        await self.names.ensure_index()
        found = unique_nodes(self.names.candidates(question))[: self.max_candidates]
        if len(found) <= 1:
            return found
        options = {f"c{i + 1}": await self._card(c.node_id) for i, c in enumerate(found)}
        request = DecisionRequest(
            state={"query": question},
            questions=[
                ChoiceQuestion(
                    key="entry",
                    instructions={"task": "Which graph node is the entity the query is about?"},
                    options=options,
                )
            ],
        )
        self.last_response = await self.decider.decide(request)
        result = self.last_response.results.get("entry")
        if result is None:
            raise DecisionError("entry choice: the decider returned no answer for question 'entry'")
        distribution = normalize_distribution(list(options), result.probabilities, key="entry")
        top = top_label(distribution)
        picked = found[int(top[1:]) - 1]
        return [picked.model_copy(update={"how": "choice", "score": distribution[top]})]
