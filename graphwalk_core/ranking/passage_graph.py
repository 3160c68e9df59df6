"""One graph of passages and the entity nodes ingestion extracted from them, with question linking.

Nodes ``0..P-1`` are the corpus passages, ``P..P+E-1`` the entities. A passage and an entity are joined
when the entity's provenance names the passage (``mentions``); an entity named like a passage's title
(the title itself, or without a trailing ``(disambiguation)``) is what that passage is about
(``about``). Entity-entity edges are the extracted relations. Specificity of an entity is its inverse
document frequency over passages, ``log(1 + P / df)``.

Question linking finds whole-word mentions of entity names/aliases and passage titles (longest first,
non-overlapping). A mention must start with a capital or a digit in the question (names are
capitalized; "director" in lower case is a word, not the entity "Director"; a name in a script without
case, such as CJK, may start anywhere) and hold a content word.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from graphwalk_core.stores.base import GraphStore
from graphwalk_core.traversal.entry import MAX_NAME_WORDS, STOPWORDS, NameIndex, words

_TOKEN = re.compile(r"\w+")
_DISAMBIGUATION = re.compile(r"\s*\([^)]*\)\s*$")
#: Name-index id prefix of a passage title (entity ids are node ids).
_TITLE = "\x00title:"

MENTIONS = "mentions"
ABOUT = "about"


def title_forms(title: str) -> tuple[str, ...]:
    """The names a passage title goes by: itself and, when it ends in ``(...)``, the bare name."""
    bare = _DISAMBIGUATION.sub("", title).strip()
    return (title, bare) if bare and bare != title else (title,)


def _key(text: str) -> tuple[str, ...]:
    return tuple(words(text))


def _starts_name(token: str) -> bool:
    """Whether a question token may start a name: it starts with a digit, or its first cased letter is
    upper case (a token in a script without case, such as CJK, has none and may)."""
    if token[0].isdigit():
        return True
    cased = next((c for c in token if c.isupper() or c.islower()), None)
    return cased is None or cased.isupper()


@dataclass(frozen=True)
class Entity:
    """An entity node: id, name, aliases and the passages its provenance names."""

    id: str
    name: str
    aliases: tuple[str, ...]
    passages: tuple[str, ...]


@dataclass(frozen=True)
class Relation:
    """A typed entity-entity edge of the graph."""

    source: str
    type: str
    target: str


@dataclass(frozen=True)
class Mention:
    """A question span and the passages (by title) and entities it names."""

    text: str
    passages: tuple[int, ...]
    entities: tuple[int, ...]


class PassageGraph:
    """Passages + entities, their ``mentions``/``about`` links and entity relations, indexed for ranking."""

    def __init__(
        self,
        passage_ids: Sequence[str],
        titles: Sequence[str],
        entities: Sequence[Entity],
        relations: Sequence[Relation] = (),
    ) -> None:
        if len(passage_ids) != len(titles):
            raise ValueError(f"{len(passage_ids)} passage ids but {len(titles)} titles")
        self.passage_ids = list(passage_ids)
        self.titles = list(titles)
        self.entities = sorted(entities, key=lambda e: e.id)
        self.n_passages = len(self.passage_ids)
        self.passage_index = {p: i for i, p in enumerate(self.passage_ids)}
        self.entity_index = {e.id: self.n_passages + j for j, e in enumerate(self.entities)}
        by_title: dict[tuple[str, ...], list[int]] = {}
        for i, title in enumerate(self.titles):
            for form in title_forms(title):
                by_title.setdefault(_key(form), []).append(i)
        n = max(self.n_passages, 1)
        links: dict[tuple[int, int], str] = {}
        specificity = np.zeros(len(self.entities))
        for j, entity in enumerate(self.entities):
            node = self.n_passages + j
            passages = [self.passage_index[p] for p in entity.passages if p in self.passage_index]
            specificity[j] = math.log(1 + n / max(len(passages), 1))
            about = {i for form in (entity.name, *entity.aliases) for i in by_title.get(_key(form), [])}
            for i in passages:
                links[(i, node)] = ABOUT if i in about else MENTIONS
        self.specificity = specificity
        #: (passage, entity node, "mentions" | "about"), sorted
        self.links = sorted((p, e, kind) for (p, e), kind in links.items())
        self.relations = sorted(
            (self.entity_index[r.source], r.type, self.entity_index[r.target])
            for r in relations
            if r.source in self.entity_index and r.target in self.entity_index and r.source != r.target
        )
        self.names = NameIndex()
        for entity in self.entities:
            self.names.add(entity.id, entity.name, entity.aliases)
        for i, title in enumerate(self.titles):
            forms = title_forms(title)
            self.names.add(f"{_TITLE}{i}", forms[0], forms[1:])
        self.names.finish()

    @property
    def n_nodes(self) -> int:
        return self.n_passages + len(self.entities)

    def node_label(self, node: int) -> str:
        """The passage id or entity id of a node index."""
        if node < self.n_passages:
            return self.passage_ids[node]
        return self.entities[node - self.n_passages].id

    def adjacency(self, weights: Callable[[int, int, str], float], relation_weight: float) -> sp.csr_matrix:
        """Symmetric weighted adjacency: ``weights(passage, entity node, kind)`` per link, and
        ``relation_weight`` per entity-entity relation (0 leaves them out)."""
        rows, cols, vals = [], [], []
        for p, e, kind in self.links:
            w = weights(p, e, kind)
            rows += [p, e]
            cols += [e, p]
            vals += [w, w]
        if relation_weight > 0:
            for a, _, b in self.relations:
                rows += [a, b]
                cols += [b, a]
                vals += [relation_weight, relation_weight]
        n = self.n_nodes
        return sp.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)

    def link(self, question: str) -> list[Mention]:
        """Capitalized whole-word mentions of entity names and passage titles, longest first."""
        # the words as the name index folds them (in NFC; folding may split a token: "İ" is "i" + a
        # combining dot), and whether each starts a capitalized token
        folded: list[str] = []
        capital: list[bool] = []
        for token in _TOKEN.finditer(unicodedata.normalize("NFC", question)):
            parts = words(token.group())
            folded += parts
            capital += [j == 0 and _starts_name(token.group()) for j in range(len(parts))]
        found: list[tuple[int, int, list[str]]] = []
        for i in range(len(folded)):
            if not capital[i]:
                continue
            for length in range(min(MAX_NAME_WORDS, len(folded) - i), 0, -1):
                key = tuple(folded[i : i + length])
                ids = self.names.by_words.get(key)
                if ids and any(len(w) > 1 and w not in STOPWORDS for w in key):
                    found.append((i, length, ids))
                    break
        found.sort(key=lambda f: (-f[1], f[0]))
        taken: set[int] = set()
        out: list[Mention] = []
        for i, length, ids in found:
            span = set(range(i, i + length))
            if span & taken:
                continue
            taken |= span
            titles = tuple(sorted({int(x[len(_TITLE) :]) for x in ids if x.startswith(_TITLE)}))
            entities = tuple(sorted({self.entity_index[x] for x in ids if not x.startswith(_TITLE)}))
            out.append(Mention(" ".join(folded[i : i + length]), titles, entities))
        return out

    @classmethod
    async def from_store(
        cls,
        store: GraphStore,
        passage_ids: Sequence[str],
        titles: Sequence[str],
        *,
        passage_of: Callable[[str], str],
    ) -> PassageGraph:
        """The graph of ``store``'s nodes and edges; ``passage_of`` maps a provenance source id to a
        passage id."""
        entities = []
        async for node in store.iter_nodes():
            passages = tuple(sorted({passage_of(p.source_id) for p in node.provenance}))
            entities.append(Entity(node.id, node.name, tuple(node.aliases), passages))
        relations = [Relation(e.source, e.type, e.target) async for e in store.iter_edges()]
        return cls(passage_ids, titles, entities, relations)
