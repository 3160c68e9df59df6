"""Candidate index for routing: exact name/alias, name-word Jaccard and embedding cosine.

It covers the stored graph AND every node planned earlier in the routing window, so a later mention can
merge into a node that no store holds yet. Between windows :meth:`CandidateIndex.sync` brings it to the
state a fresh index loaded from the store would have, touching only the nodes that changed. Vectors are
embedded lazily in batches and looked up by normalized name (a new node reuses its mention's vector);
every text is embedded at most once per run (a :class:`~graphwalk_core.embeddings.pool.VectorPool`, kept
across windows and full reloads). The index holds no vectors of its own: a row is a pool row number, and the
rows are scored against the pool's vectors a block of :data:`SCORE_ROWS` rows at a time (plus a small copy
of the rows appended since the last :meth:`CandidateIndex.prefilter`, bounded by a routing window).
A node costs little else: a slotted entry, its ids and name words in tuples (a set only for a word many names
share).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

import numpy as np

from graphwalk_core.blas import one_blas_thread
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.pool import VectorPool
from graphwalk_core.ingest.text import jaccard, name_words, normalize_name

DEFAULT_COSINE_THRESHOLD = 0.75
DEFAULT_JACCARD_THRESHOLD = 0.5
DEFAULT_MAX_CANDIDATES = 5
#: A name word carried by more nodes than this does not open the lexical candidate pool.
DEFAULT_MAX_WORD_DF = 200
#: Two float32 computations of one cosine of unit vectors (384 dims: <= 5e-5 apart) differ by far less
#: than this, so a bound computed one way decides a threshold test computed the other way.
COSINE_MARGIN = 1e-3
#: Queries scored at once by :meth:`CandidateIndex.prefilter` (bounds its scratch matrix).
PREFILTER_BLOCK = 256
#: Index rows gathered from the pool and scored at once (bounds the scratch: rows x dim and queries x rows).
SCORE_ROWS = 4096
#: Near rows a name keeps before they are cut to its best (see ``CandidateIndex._near_rows_of``).
NEAR_KEPT = 64
#: A word's node ids are a tuple up to this many, then a set (a set costs 216 bytes from its first id).
WORD_TUPLE_MAX = 16
_NO_ROWS = np.zeros(0, dtype=np.int32)
#: The ids of the nodes carrying a word.
Postings: TypeAlias = tuple[str, ...] | set[str]


def _groups(scored: list[tuple[int, np.ndarray]], limit: int) -> Iterator[list[tuple[int, np.ndarray]]]:
    """``scored`` (name, rows) pairs in order, in consecutive groups of at most ``limit`` rows in all (a
    pair with more rows alone: split them first)."""
    group: list[tuple[int, np.ndarray]] = []
    size = 0
    for item in scored:
        if group and size + len(item[1]) > limit:
            yield group
            group, size = [], 0
        group.append(item)
        size += len(item[1])
    if group:
        yield group


@dataclass(slots=True)
class IndexEntry:
    """What routing knows about one node (stored or planned in this run); ``words``: its name's distinct
    words, sorted (a tuple: about a quarter of a small frozenset's size)."""

    id: str
    name: str
    type: str
    aliases: tuple[str, ...] = ()
    summary: str | None = None
    relations: tuple[str, ...] = ()
    stored: bool = False
    words: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.words = tuple(sorted(name_words(self.name)))


def _posted(ids: Postings | None, node_id: str) -> Postings:
    """``ids`` with ``node_id`` (a new tuple, or the set itself)."""
    if ids is None:
        return (node_id,)
    if isinstance(ids, set):
        ids.add(node_id)
        return ids
    if node_id in ids:
        return ids
    return (*ids, node_id) if len(ids) < WORD_TUPLE_MAX else {*ids, node_id}


def _unposted(ids: Postings, node_id: str) -> Postings:
    """``ids`` without ``node_id`` (a new tuple, or the set itself)."""
    if isinstance(ids, set):
        ids.discard(node_id)
        return ids
    return tuple(i for i in ids if i != node_id) if node_id in ids else ids


def _drop_posting(index: dict[str, Any], key: str, node_id: str) -> None:
    """``node_id`` out of ``index[key]``'s ids; the key goes when none are left."""
    ids = index.get(key)
    if ids is not None:
        ids = _unposted(ids, node_id)
        if ids:
            index[key] = ids
        else:
            del index[key]


def first_spellings(names: Iterable[str]) -> dict[str, str]:
    """Normalized name -> its first spelling in ``names``, in first-seen order: the text the index embeds
    for that name, as written, so the embedder's own text cache also answers the local decider (which
    embeds mention and card names verbatim)."""
    first: dict[str, str] = {}
    for name in names:
        first.setdefault(normalize_name(name), name)
    return first


class Candidate(NamedTuple):
    node_id: str
    score: float
    how: str  # exact | jaccard | cosine


class CandidateIndex:
    """Incremental index over node names; ``candidates`` scores a batch of mention names at once."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        cosine_threshold: float = DEFAULT_COSINE_THRESHOLD,
        jaccard_threshold: float = DEFAULT_JACCARD_THRESHOLD,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        max_word_df: int = DEFAULT_MAX_WORD_DF,
        pool: VectorPool | None = None,
    ) -> None:
        self.embedder = embedder
        self.cosine_threshold = cosine_threshold
        self.jaccard_threshold = jaccard_threshold
        self.max_candidates = max_candidates
        self.max_word_df = max_word_df
        self.entries: dict[str, IndexEntry] = {}
        self._exact: dict[str, tuple[str, ...]] = {}  # normalized name or alias -> node ids
        self._words: dict[str, Postings] = {}  # normalized word -> ids of the nodes whose names carry it
        self._rows: list[str] = []  # index row -> node id
        self._pool_rows: list[int] = []  # index row -> pool row of its vector
        #: the vectors of rows ``_near_rows`` on (appended since the last prefilter): the first ``_tail_rows``
        #: rows of ``_tail``, filled as they are scored (its capacity doubles; a window's rows at most)
        self._tail = np.zeros((0, embedder.dim if embedder else 0), dtype=np.float32)
        self._tail_rows = 0
        self._unembedded: list[str] = []
        #: every text's vector, embedded once per run (``pool``: carried over from an earlier index)
        self.pool = pool if pool is not None else VectorPool(embedder) if embedder is not None else None
        self._vectors: dict[str, int] = {}  # normalized name -> pool row of its first spelling
        #: nodes added or changed since the last :meth:`sync` (routing in the window in flight)
        self.dirty: set[str] = set()
        #: normalized name -> its rows near the cosine threshold among the first ``_near_rows`` rows
        self._near: dict[str, np.ndarray] = {}
        self._near_rows = 0

    @property
    def embedded_texts(self) -> int:
        """Distinct texts embedded so far (each one once)."""
        return self.pool.embedded if self.pool is not None else 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.entries

    def word_df(self, word: str) -> int:
        """How many indexed nodes carry the normalized ``word`` in a name or alias."""
        return len(self._words.get(word, ()))

    def exact(self, name: str) -> list[str]:
        """Ids of nodes whose name or an alias normalizes like ``name`` (insertion order)."""
        return list(self._exact.get(normalize_name(name), ()))

    def add(self, entry: IndexEntry, *, embed: bool = True) -> None:
        """Index a node (or refresh its names when already indexed); ``embed=False``: no vector (literals)."""
        self.dirty.add(entry.id)
        if entry.id in self.entries:
            for name in (entry.name, *entry.aliases):
                self.add_name(entry.id, name)
            return
        self.entries[entry.id] = entry
        for name in (entry.name, *entry.aliases):
            self._index_name(entry.id, name)
        if self.embedder is not None and embed:
            self._unembedded.append(entry.id)

    def add_name(self, node_id: str, name: str) -> None:
        """A mention named ``name`` merged into ``node_id``: later exact lookups find it."""
        entry = self.entries[node_id]
        self.dirty.add(node_id)
        if name != entry.name and name not in entry.aliases:
            entry.aliases = (*entry.aliases, name)
        self._index_name(node_id, name)

    def add_relation(self, node_id: str, text: str, limit: int = 8) -> None:
        entry = self.entries.get(node_id)
        if entry is not None and len(entry.relations) < limit and text not in entry.relations:
            self.dirty.add(node_id)
            entry.relations = (*entry.relations, text)

    def _index_name(self, node_id: str, name: str, *, in_order: bool = False) -> None:
        """Index ``name`` for ``node_id``: appended to its exact ids (``in_order``: inserted in id order)."""
        key = normalize_name(name)
        ids = self._exact.get(key, ())
        if node_id not in ids:
            at = bisect.bisect(ids, node_id) if in_order else len(ids)
            self._exact[key] = (*ids[:at], node_id, *ids[at:])
        words = self._words
        for word in name_words(name):
            words[word] = _posted(words.get(word), node_id)

    def _unindex(self, node_id: str) -> None:
        """Forget ``node_id`` entirely (entry, names, words, vector row): the names it is indexed under are
        its entry's name and aliases."""
        entry = self.entries.pop(node_id, None)
        if entry is None:
            return
        for name in (entry.name, *entry.aliases):
            _drop_posting(self._exact, normalize_name(name), node_id)
            for word in name_words(name):
                _drop_posting(self._words, word, node_id)

    def sync(self, changes: Mapping[str, IndexEntry | None]) -> None:
        """Make the index what a fresh index loaded from the store would be, given the entry of every node
        that changed since the last sync (``None``: gone, or not to be indexed).

        ``changes`` must cover :attr:`dirty` (every node routing added or extended since the last sync)
        and every node the store wrote, re-keyed or deleted since. Other entries are kept as they are;
        exact lists stay in id order, as :meth:`add` in id order builds them; vector rows and the
        name -> vector map start over (the vectors come from the pool, never re-embedded).
        """
        missing = self.dirty - changes.keys()
        if missing:
            raise ValueError(
                f"sync() needs the stored state of {len(missing)} changed node(s), e.g. {min(missing)}"
            )
        for node_id in changes:
            self._unindex(node_id)
        for node_id in sorted(changes):
            entry = changes[node_id]
            if entry is None:
                continue
            self.entries[entry.id] = entry  # its own id string: one copy per node
            for name in (entry.name, *entry.aliases):
                self._index_name(entry.id, name, in_order=True)
        self.dirty = set()
        self._rows, self._pool_rows = [], []
        self._unembedded = sorted(self.entries) if self.embedder is not None else []
        self._vectors = {}
        self._near, self._near_rows, self._tail_rows = {}, 0, 0

    def _vector_rows(self, names: Sequence[str]) -> list[int]:
        """Pool rows of ``names``' vectors (cached by normalized name; unseen ones embedded in one batch)."""
        assert self.embedder is not None and self.pool is not None
        missing = {k: n for k, n in first_spellings(names).items() if k not in self._vectors}
        if missing:
            self._vectors.update(zip(missing, self.pool.rows(list(missing.values())), strict=True))
        return [self._vectors[normalize_name(n)] for n in names]

    def embed(self, names: Sequence[str]) -> np.ndarray:
        """Vectors for ``names`` (cached by normalized name; unseen ones embedded in one batch)."""
        assert self.pool is not None
        return self.pool.vectors(self._vector_rows(names))

    def row_vectors(self, rows: Iterable[int]) -> np.ndarray:
        """The vectors of the index ``rows`` (a new array, gathered from the pool)."""
        assert self.pool is not None
        if isinstance(rows, range) and rows.step == 1:  # a block of rows: one list slice
            return self.pool.vectors(self._pool_rows[rows.start : rows.stop])
        return self.pool.vectors([self._pool_rows[row] for row in rows])

    def _flush_vectors(self) -> None:
        if not self._unembedded:
            return
        ids = self._unembedded
        self._unembedded = []
        self._pool_rows.extend(self._vector_rows([self.entries[i].name for i in ids]))
        self._rows.extend(ids)

    def prefilter(self, names: Sequence[str]) -> None:
        """Score ``names`` against every row now in the index in a few large matrix products, keeping each
        name's *near rows* (within :data:`COSINE_MARGIN` of the threshold): :meth:`candidates` then scores
        only those rows and the rows appended since, instead of every row (rows only get appended within
        a window; :meth:`sync` resets)."""
        if self.embedder is None or not names:
            return
        self._flush_vectors()
        rows = len(self._rows)
        if rows != self._near_rows:
            self._near, self._near_rows, self._tail_rows = {}, rows, 0
        first = {k: n for k, n in first_spellings(names).items() if k not in self._near}
        if not first:
            return
        keys = list(first)
        if not rows:
            self._near.update(dict.fromkeys(keys, _NO_ROWS))
            return
        self._near.update(zip(keys, self._near_rows_of(self.embed(list(first.values())), 0), strict=True))

    def _segments(self, start: int) -> Iterator[tuple[int, np.ndarray]]:
        """The vectors of rows ``start`` on, as (first row, contiguous block) pairs: from the prefiltered
        rows' end, the tail (extended by the rows appended since it was last read); else gathered from the
        pool :data:`SCORE_ROWS` rows at a time."""
        rows = len(self._rows)
        if start and start == self._near_rows:
            have, need = self._tail_rows, rows - start
            if need > len(self._tail):
                grown = np.empty((max(need, 2 * len(self._tail), 64), self._tail.shape[1]), np.float32)
                grown[:have] = self._tail[:have]
                self._tail = grown
            if have < need:
                self._tail[have:need] = self.row_vectors(range(start + have, rows))
            self._tail_rows = need
            yield start, self._tail[:need]
            return
        for first in range(start, rows, SCORE_ROWS):
            yield first, self.row_vectors(range(first, min(first + SCORE_ROWS, rows)))

    def _near_rows_of(self, vectors: np.ndarray, start: int) -> list[np.ndarray]:
        """Per vector, the rows from ``start`` on whose float32 cosine is within the margin of the threshold
        and of its ``max_candidates``-th best (a superset of the best rows whose exact cosine reaches the
        threshold), in row order. Each block of rows is read from the pool once and scored against
        :data:`PREFILTER_BLOCK` vectors at a time; a name near many rows (a date among dates) keeps its best
        beyond :data:`NEAR_KEPT`, so what a name holds does not grow with the graph (unless many rows tie
        within the margin of its best)."""
        bound = self.cosine_threshold - COSINE_MARGIN
        found: list[list[np.ndarray]] = [[] for _ in vectors]
        scores: list[list[np.ndarray]] = [[] for _ in vectors]
        with one_blas_thread():
            for first, block in self._segments(start):
                for at in range(0, len(vectors), PREFILTER_BLOCK):
                    product = vectors[at : at + PREFILTER_BLOCK] @ block.T
                    cols, rows = np.nonzero(product >= bound)
                    values = product[cols, rows]
                    del product
                    cuts = np.searchsorted(cols, np.arange(1, min(PREFILTER_BLOCK, len(vectors) - at)))
                    for n, part, value in zip(
                        range(at, len(vectors)), np.split(rows, cuts), np.split(values, cuts), strict=False
                    ):
                        if len(part):
                            found[n].append(part + first)
                            scores[n].append(value)
                            if sum(map(len, found[n])) > NEAR_KEPT:
                                found[n], scores[n] = self._best_near(found[n], scores[n])
                del block  # before the next block is gathered
        return [np.concatenate(parts).astype(np.int32) if parts else _NO_ROWS for parts in found]

    def _best_near(
        self, rows: list[np.ndarray], scores: list[np.ndarray]
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """One name's near rows (and float32 scores) cut to those within the margin of its
        ``max_candidates``-th best score: the rest have at least that many rows better by exact score."""
        row, score = np.concatenate(rows), np.concatenate(scores)
        nth = len(score) - max(self.max_candidates, 1)
        if nth > 0:
            keep = score >= np.partition(score, nth)[nth] - COSINE_MARGIN
            row, score = row[keep], score[keep]
        return [row], [score]

    def _cosine(self, names: Sequence[str]) -> list[list[Candidate]]:
        """Per name, up to ``max_candidates`` rows whose cosine reaches the threshold, best first.

        Only the rows near the threshold by a float32 product (:meth:`prefilter`'s near rows, the rows
        appended since, or every row for a name the prefilter has not seen) are scored exactly: the float64
        sum of the float32 products, rounded to float32, so a score does not depend on how many rows the
        matrix holds or on which BLAS kernel a product's shape selects. Ties go to the lower node id."""
        out: list[list[Candidate]] = [[] for _ in names]
        if not self._rows:
            return out
        vectors = self.embed(names)
        found = [self._near.get(normalize_name(n)) for n in names]
        seen = [i for i, rows in enumerate(found) if rows is not None]
        unseen = [i for i, rows in enumerate(found) if rows is None]
        near: dict[int, np.ndarray] = {}
        if unseen:  # not prefiltered: every row
            near.update(zip(unseen, self._near_rows_of(vectors[unseen], 0), strict=True))
        if seen and len(self._rows) > self._near_rows:  # the prefiltered rows, then the rows appended since
            appended = self._near_rows_of(vectors[seen], self._near_rows)
            near.update((i, np.concatenate((found[i], rows))) for i, rows in zip(seen, appended, strict=True))
        else:
            near.update((i, found[i]) for i in seen)
        threshold = self.cosine_threshold
        scored = [(i, rows) for i, rows in near.items() if len(rows)]
        if not scored:
            return out
        pieces = [
            (i, rows[at : at + SCORE_ROWS]) for i, rows in scored for at in range(0, len(rows), SCORE_ROWS)
        ]
        with one_blas_thread():
            for group in _groups(pieces, SCORE_ROWS):  # one gather per block of rows: bounded scratch
                gathered = self.row_vectors(np.concatenate([rows for _, rows in group]).tolist())
                start = 0
                for i, rows in group:
                    matrix = gathered[start : start + len(rows)].astype(np.float64)
                    start += len(rows)
                    exact = (matrix @ vectors[i].astype(np.float64)).astype(np.float32)
                    best = out[i] + [
                        Candidate(self._rows[row], score, "cosine")
                        for row, score in zip(rows.tolist(), exact.tolist(), strict=True)
                        if score >= threshold
                    ]
                    best.sort(key=lambda c: (-c.score, c.node_id))
                    # the best so far: a total order, so the same at the end
                    out[i] = best[: self.max_candidates]
                del gathered, matrix  # before the next block is gathered
        return out

    def candidates(self, names: Sequence[str], *, fuzzy: bool = True) -> list[list[Candidate]]:
        """Up to ``max_candidates`` per name: exact matches first, then Jaccard/cosine by score.

        Cosine runs only for names without an exact match (one matrix product for the batch, skipped when
        :meth:`prefilter` shows that no row can reach the threshold for any of them).
        """
        out: list[list[Candidate]] = []
        need_vectors: list[int] = []
        threshold = self.jaccard_threshold
        entries = self.entries
        for i, name in enumerate(names):
            exact = self._exact.get(normalize_name(name), ())
            found: dict[str, Candidate] = {nid: Candidate(nid, 1.0, "exact") for nid in exact}
            if fuzzy:
                words = name_words(name)
                n = len(words)
                shared: Counter[str] = Counter()  # node -> query words indexed to it (name or alias)
                hub_words = 0  # words too common to open the pool still count in the Jaccard score
                for word in words:
                    ids = self._words.get(word)
                    if ids is None:
                        continue
                    if len(ids) <= self.max_word_df:
                        shared.update(ids)
                    else:
                        hub_words += 1
                for nid, count in shared.items():
                    other = entries[nid].words
                    m = len(other)
                    # |a ∩ b| <= count + hub_words: skip nodes that cannot reach the threshold
                    most = min(count + hub_words, n, m)
                    if nid in found or most / (n + m - most) < threshold:
                        continue
                    score = jaccard(words, other)
                    if score >= threshold:
                        found[nid] = Candidate(nid, score, "jaccard")
                if not exact and self.embedder is not None:
                    need_vectors.append(i)
            out.append(list(found.values()))
        if need_vectors:
            self._flush_vectors()
            cosine = self._cosine([names[i] for i in need_vectors])
            for i, found_cosine in zip(need_vectors, cosine, strict=True):
                if not found_cosine:
                    continue
                have = {c.node_id: c for c in out[i]}
                for cand in found_cosine:
                    if cand.node_id not in have or have[cand.node_id].score < cand.score:
                        have[cand.node_id] = cand
                out[i] = list(have.values())
        return [
            sorted(c, key=lambda x: (x.how != "exact", -x.score, x.node_id))[: self.max_candidates]
            for c in out
        ]
