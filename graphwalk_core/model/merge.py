"""Pure merge logic shared by every store: union provenance, record conflicts, derive surface names.

Merging is order-independent: merging A into B gives the same element as merging B into A (apart
from the id, which is the first argument's), and merge order over three or more elements does not
matter either. Nothing is silently overwritten: disagreeing attribute values (and disagreeing real
types) become :class:`AttributeConflict` records, each value with the provenance backing it.

Conventions: an attribute missing from ``attribute_provenance`` is backed by the element's provenance
(merges write it explicitly); a node without ``name_sources`` (or ``summary_sources``) counts its
name and aliases (or summary) as backed by its provenance; "backed by most sources" counts distinct
source ids, ties going to the smallest canonical JSON (values) or, for texts (names, summaries),
one in NFC without invisible format characters, then the longest, then the lexicographically smallest.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from bisect import bisect_left
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView
from collections.abc import Set as AbstractSet
from itertools import chain, islice
from operator import attrgetter
from typing import TypeVar, overload

from graphwalk_core.errors import InputError
from graphwalk_core.model.elements import (
    GENERIC_TYPE,
    AttributeConflict,
    ConflictValue,
    Edge,
    JSONValue,
    Node,
    Provenance,
)
from graphwalk_core.model.hashing import canonical_json

#: Reserved key (not an attribute): ``Node.conflicts[key]`` records disagreeing real node types and
#: ``Node.attribute_provenance[key]`` the sources backing the node's real type (after a merge).
TYPE_CONFLICT_KEY = "@type"

_E = TypeVar("_E", Node, Edge)
#: canonical JSON of a value -> (value, provenance backing it)
_ValueState = dict[str, tuple[JSONValue, tuple[Provenance, ...]]]


class ProvenanceSet:
    """Provenance deduplicated and sorted by ``Provenance.sort_key`` (what :func:`union_provenance`
    returns), with its support counted once. It equals, hashes, pickles and serializes as the plain tuple
    of its records.

    Versions share one list of records: a set is the first ``len`` records of its list. Records that sort
    after all of a set's (a later document's: the usual merge into a hub node) are appended to that list
    in place when the set is its newest version, so a merge costs what it adds, not what the hub holds;
    an older version never sees them (it stops at its own length), and adding to an older version (or
    inserting among the records) copies. Its source ids are counted when asked for, from those of the
    version it grew from when that one knew them."""

    __slots__ = ("__weakref__", "_known", "_len", "_records", "_sources", "_support")

    def __init__(self, records: list[Provenance], length: int | None = None, support: int | None = None):
        """A set over ``records[:length]`` (all of them by default), which must be sorted and distinct."""
        self._records = records
        self._len = len(records) if length is None else length
        self._support = support
        self._sources: frozenset[str] | None = None
        #: (the source ids of the first ``n`` records, n), from an older version, or None
        self._known: tuple[frozenset[str], int] | None = None

    @classmethod
    def of(cls, provenance: Iterable[Provenance]) -> ProvenanceSet:
        """``provenance`` deduplicated and sorted."""
        if isinstance(provenance, ProvenanceSet):
            return provenance
        items = provenance if isinstance(provenance, (tuple, list)) else list(provenance)
        if len(items) < 2:  # sorted and distinct as it is
            return cls(list(items))
        return cls(sorted(set(items), key=Provenance.sort_key))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Provenance]:
        return islice(self._records, self._len)

    @overload
    def __getitem__(self, index: int) -> Provenance: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Provenance, ...]: ...

    def __getitem__(self, index: int | slice) -> Provenance | tuple[Provenance, ...]:
        if isinstance(index, slice):
            return self.as_tuple()[index]
        at = index + self._len if index < 0 else index
        if not 0 <= at < self._len:
            raise IndexError("ProvenanceSet index out of range")
        return self._records[at]

    def as_tuple(self) -> tuple[Provenance, ...]:
        """The records as a plain tuple."""
        return tuple(islice(self._records, self._len))

    def __contains__(self, item: object) -> bool:
        return item in self.as_tuple()

    def __reversed__(self) -> Iterator[Provenance]:
        return reversed(self.as_tuple())

    def index(self, item: Provenance) -> int:
        return self.as_tuple().index(item)

    def count(self, item: Provenance) -> int:
        return self.as_tuple().count(item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProvenanceSet):
            if other._records is self._records:
                return other._len == self._len
            return self._len == other._len and self.as_tuple() == other.as_tuple()
        if isinstance(other, tuple):
            return self._len == len(other) and self.as_tuple() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __repr__(self) -> str:
        return repr(self.as_tuple())

    def __reduce__(self) -> tuple[type[ProvenanceSet], tuple[list[Provenance], None, int | None]]:
        return ProvenanceSet, (list(self), None, self._support)

    @property
    def support(self) -> int:
        """How many distinct sources it has."""
        if self._support is None:
            self._support = len({p.source_id for p in self})
        return self._support

    @property
    def sources(self) -> frozenset[str]:
        """Its distinct source ids."""
        if self._sources is None:
            known = self._known
            if known is None:
                self._sources = frozenset(map(_SOURCE_ID, self))
            else:  # an older version's, and those of the records appended since
                self._sources = _with(known[0], map(_SOURCE_ID, self._records[known[1] : self._len]))
                self._known = None
        return self._sources

    def since(self, older: ProvenanceSet) -> Iterator[Provenance] | None:
        """The records this set holds beyond ``older``'s when it grew from ``older`` by appends (then it
        holds all of ``older``'s records); None when that is not known."""
        if older._records is self._records and older._len <= self._len:
            return iter(self._records[older._len : self._len])  # a slice: no walk over the older records
        return None

    def adding(self, items: Sequence[Provenance]) -> ProvenanceSet:
        """This set with ``items`` (sorted by ``Provenance.sort_key``) added: the result :meth:`of` gives.
        Records after every record are appended (see the class docstring); others are inserted into a
        copy. Its support is updated from the added records' neighbours, not recounted."""
        records, length = self._records, self._len
        if not items:
            return self
        if length and items[0].sort_key() > records[length - 1].sort_key():
            return self._appending(items)
        out = records[:length]
        support = self.support
        at = 0
        for item in items:  # sorted: each one goes at or after the previous one's run of equal keys
            key = item.sort_key()
            at = bisect_left(out, key, at, key=Provenance.sort_key)
            end = at
            while end < len(out) and out[end].sort_key() == key:
                if out[end] == item:
                    break
                end += 1
            else:
                source = item.source_id
                near = out[at - 1 : at + 1] if at else out[:1]
                if all(p.source_id != source for p in near):
                    support += 1
                out.insert(end, item)
        if len(out) == length:
            return self
        return ProvenanceSet(out, support=support)

    def _appending(self, items: Sequence[Provenance]) -> ProvenanceSet:
        """This non-empty set with ``items`` (sorted, all after its last record) appended."""
        records, length = self._records, self._len
        support = self.support
        previous = records[length - 1]
        if len(items) == 1:  # after the last record, so new
            fresh = [items[0]]
            support += items[0].source_id != previous.source_id
        else:
            fresh = []
            last_key = None
            for item in items:
                key = item.sort_key()
                if key == last_key:  # a total order: the same record again
                    continue
                if item.source_id != previous.source_id:
                    support += 1
                fresh.append(item)
                previous, last_key = item, key
        with _APPENDING:  # the newest version grows its list; any other copies it
            if len(records) == length:
                records.extend(fresh)
            else:
                records = [*islice(records, length), *fresh]
        out = ProvenanceSet(records, length + len(fresh), support)
        out._known = (self._sources, length) if self._sources is not None else self._known
        return out


Sequence.register(ProvenanceSet)
_SOURCE_ID = attrgetter("source_id")


def _with(known: frozenset[str], more: Iterable[str]) -> frozenset[str]:
    """``known`` with ``more`` (itself when they add nothing)."""
    extra = set(more)
    return known if extra <= known else known | extra


#: Held while a set checks that it is its list's newest version and appends to it.
_APPENDING = threading.RLock()
#: Up to this many records are inserted into a large ProvenanceSet rather than re-sorted with it.
_FEW_INSERTS = 16


def union_provenance(*groups: Iterable[Provenance]) -> ProvenanceSet:
    """All provenance of ``groups``, deduplicated and sorted by ``Provenance.sort_key``."""
    largest: ProvenanceSet | None = None
    rest: list[Provenance] = []
    for group in groups:
        if isinstance(group, ProvenanceSet) and (largest is None or len(group) > len(largest)):
            if largest is not None:
                rest.extend(largest)
            largest = group
        elif group is not largest:  # the same set twice adds nothing
            rest.extend(group)
    if largest is None:
        return ProvenanceSet.of(rest)
    if not rest:
        return largest
    if len(rest) > 1:
        rest = sorted(set(rest), key=Provenance.sort_key)
    if len(rest) <= _FEW_INSERTS or not largest or rest[0].sort_key() > largest[-1].sort_key():
        return largest.adding(rest)
    rest.extend(largest)
    return ProvenanceSet.of(rest)


def support(provenance: Iterable[Provenance]) -> int:
    """How many distinct sources back a value."""
    if isinstance(provenance, ProvenanceSet):
        return provenance.support
    return len({p.source_id for p in provenance})


def _tuple(provenance: Iterable[Provenance]) -> tuple[Provenance, ...]:
    """``provenance`` as a tuple (a ProvenanceSet stays one)."""
    return provenance if isinstance(provenance, (tuple, ProvenanceSet)) else tuple(provenance)  # type: ignore[return-value]


def _best_value(state: _ValueState) -> str:
    """The canonical key of the value backed by most sources (ties: smallest canonical JSON)."""
    return min(state, key=lambda k: (-support(state[k][1]), k))


def _attribute_state(element: Node | Edge, key: str) -> _ValueState:
    """Every value an element holds for ``key``, with the provenance backing each."""
    conflict = element.conflicts.get(key)
    if conflict is not None:
        return {canonical_json(cv.value): (cv.value, _tuple(cv.provenance)) for cv in conflict.values}
    if key not in element.attributes:
        return {}
    value = element.attributes[key]
    provenance = element.attribute_provenance.get(key, element.provenance)
    return {canonical_json(value): (value, _tuple(provenance))}


def _union_states(*states: _ValueState) -> _ValueState:
    merged: _ValueState = {}
    for state in states:
        for k, (value, provenance) in state.items():
            old = merged.get(k)
            merged[k] = (value, union_provenance(old[1] if old else (), provenance))
    return merged


def _resolved(
    key: str, state: _ValueState
) -> tuple[JSONValue, tuple[Provenance, ...], AttributeConflict | None]:
    """(main value, its provenance, the conflict or None) for a non-empty value state."""
    best = _best_value(state)
    value, provenance = state[best]
    if len(state) == 1:
        return value, provenance, None
    # model_construct: the values and provenance come from validated models (keeps ProvenanceSets)
    values = tuple(
        ConflictValue.model_construct(value=v, provenance=p) for _, (v, p) in sorted(state.items())
    )
    return value, provenance, AttributeConflict.model_construct(key=key, values=values)


def _rebuild_attributes(
    states: Mapping[str, _ValueState],
) -> tuple[dict[str, JSONValue], dict[str, tuple[Provenance, ...]], dict[str, AttributeConflict]]:
    attributes: dict[str, JSONValue] = {}
    attribute_provenance: dict[str, tuple[Provenance, ...]] = {}
    conflicts: dict[str, AttributeConflict] = {}
    for key in sorted(states):
        if not states[key]:
            continue
        value, provenance, conflict = _resolved(key, states[key])
        attributes[key] = value
        attribute_provenance[key] = provenance
        if conflict is not None:
            conflicts[key] = conflict
    return attributes, attribute_provenance, conflicts


def _merged_attributes(
    existing: Node | Edge, incoming: Node | Edge
) -> tuple[dict[str, JSONValue], dict[str, tuple[Provenance, ...]], dict[str, AttributeConflict]]:
    keys = (set(existing.attributes) | set(existing.conflicts) | set(incoming.attributes)) | set(
        incoming.conflicts
    )
    keys.discard(TYPE_CONFLICT_KEY)
    return _rebuild_attributes(
        {k: _union_states(_attribute_state(existing, k), _attribute_state(incoming, k)) for k in keys}
    )


def _type_state(node: Node) -> _ValueState:
    conflict = node.conflicts.get(TYPE_CONFLICT_KEY)
    if conflict is not None:
        return {canonical_json(cv.value): (cv.value, _tuple(cv.provenance)) for cv in conflict.values}
    provenance = node.attribute_provenance.get(TYPE_CONFLICT_KEY, node.provenance)
    return {canonical_json(node.type): (node.type, _tuple(provenance))}


def _merged_type_state(existing: Node, incoming: Node, provenance: tuple[Provenance, ...]) -> _ValueState:
    """The union of both nodes' type states, given the union of their ``provenance``: when one type is
    backed by each node's whole provenance (a node without a recorded backing), its union is that one,
    not a second copy (a hub's type backing is as long as its provenance)."""
    mine, theirs = _type_state(existing), _type_state(incoming)
    if len(mine) == 1 and mine.keys() == theirs.keys():
        [(key, (value, backing))] = mine.items()
        if backing is existing.provenance and theirs[key][1] is incoming.provenance:
            return {key: (value, provenance)}
    return _union_states(mine, theirs)


def _apply_type(
    state: _ValueState,
    attribute_provenance: dict[str, tuple[Provenance, ...]],
    conflicts: dict[str, AttributeConflict],
) -> str:
    """The node type from ``state``; records who backs it and any conflict among real types.

    The generic type never conflicts: it yields to any real type, and its sources back nothing.
    """
    real = {k: v for k, v in state.items() if v[0] != GENERIC_TYPE}
    if not real:
        return GENERIC_TYPE
    value, provenance, conflict = _resolved(TYPE_CONFLICT_KEY, real)
    attribute_provenance[TYPE_CONFLICT_KEY] = provenance
    if conflict is not None:
        conflicts[TYPE_CONFLICT_KEY] = conflict
    return value


class _TextLog:
    """What the versions of one :class:`TextSources` share: every (text, provenance) they were given, in
    the order given, and where each text's entries are."""

    __slots__ = ("at", "latest", "texts", "values")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.values: list[tuple[Provenance, ...]] = []
        #: text -> positions of its entries (increasing); the last one is the newest version's
        self.at: dict[str, list[int]] = {}
        #: text -> its provenance in the newest version (the one as long as the log)
        self.latest: dict[str, tuple[Provenance, ...]] = {}

    def append(self, text: str, value: tuple[Provenance, ...]) -> None:
        positions = self.at.get(text)
        if positions is None:
            self.at[text] = [len(self.texts)]
        else:
            positions.append(len(self.texts))
        self.texts.append(text)
        self.values.append(value)
        self.latest[text] = value


_ABSENT: object = object()
#: Up to this many texts, a new version's text order is derived from its parent's right away.
_FEW_TEXTS = 64


class TextSources:
    """Texts in text order, each with the :class:`ProvenanceSet` backing it (what :func:`_union_sources`
    returns), remembering its best text (see :func:`_best_text`) once known. It equals, pickles and
    serializes as the plain dict; it is never changed once built.

    A hub node gets a summary per mention, so versions share one log of entries (:class:`_TextLog`): a
    version is its log's first entries, a merge appends what it changed to the log when its map is the
    newest version (else the map is copied first), and the text order and source ids are found when
    asked for, not rebuilt per merge (source ids from those of the version it grew from when that one
    knew them). An older version never sees a later one's entries."""

    __slots__ = ("_best", "_keys", "_known", "_log", "_n", "_size", "_sources")

    def __init__(self, items: Iterable[tuple[str, tuple[Provenance, ...]]] = ()) -> None:
        """A map of ``items`` (a text given twice keeps its last provenance)."""
        log = _TextLog()
        latest = log.latest = dict(items)
        log.texts, log.values = list(latest), list(latest.values())
        log.at = {text: [at] for at, text in enumerate(log.texts)}
        self._log, self._n, self._size = log, len(log.texts), len(latest)
        self._best: str | None = None
        self._keys: tuple[str, ...] | None = None
        self._sources: frozenset[str] | None = None
        #: (the source ids of the log's first ``n`` entries, n), from an older version, or None
        self._known: tuple[frozenset[str], int] | None = None

    def _get(self, text: str, n: int | None = None) -> object:
        """The provenance of ``text`` in this version (or in the one of the log's first ``n`` entries)."""
        log = self._log
        if n is None:
            n = self._n
            value = log.latest.get(text, _ABSENT)
            if len(log.texts) == n:  # the newest version when read (a log only grows): its latest values
                return value
        positions = log.at.get(text)
        if positions is None:
            return _ABSENT
        at = positions[-1]
        if at >= n:  # an older version: its own last entry
            if positions[0] >= n:
                return _ABSENT
            at = positions[bisect_left(positions, n) - 1]
        return log.values[at]

    def __getitem__(self, text: str) -> tuple[Provenance, ...]:
        value = self._get(text)
        if value is _ABSENT:
            raise KeyError(text)
        return value  # type: ignore[return-value]

    def get(self, text: str, default: object = None) -> object:  # type: ignore[override]
        value = self._get(text)
        return default if value is _ABSENT else value

    def __contains__(self, text: object) -> bool:
        return self._get(text) is not _ABSENT  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts())

    def keys(self) -> KeysView[str]:
        return KeysView(self)  # type: ignore[arg-type]

    def items(self) -> ItemsView[str, tuple[Provenance, ...]]:
        return ItemsView(self)  # type: ignore[arg-type]

    def values(self) -> ValuesView[tuple[Provenance, ...]]:
        return ValuesView(self)  # type: ignore[arg-type]

    def _values(self) -> list[tuple[Provenance, ...]]:
        """Its texts' provenance (in no particular order)."""
        log = self._log
        with _APPENDING:
            if len(log.texts) == self._n:
                return list(log.latest.values())
        return [self[t] for t in self._texts()]

    def _texts(self) -> tuple[str, ...]:
        """Its texts in text order."""
        if self._keys is None:
            log, n = self._log, self._n
            with _APPENDING:
                newest = len(log.texts) == n
                keys = list(log.latest) if newest else [t for t, at in log.at.items() if at[0] < n]
            keys.sort()
            self._keys = tuple(keys)
        return self._keys

    def as_dict(self) -> dict[str, tuple[Provenance, ...]]:
        """A plain dict of plain tuples, in text order (what it serializes as)."""
        texts = self._texts()
        log = self._log
        with _APPENDING:
            newest = len(log.texts) == self._n
            values = list(map(log.latest.__getitem__, texts)) if newest else [self[t] for t in texts]
        return {t: v if type(v) is tuple else tuple(v) for t, v in zip(texts, values, strict=True)}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TextSources):
            if other._log is self._log and other._n == self._n:
                return True
            other = other.as_dict()
        elif not isinstance(other, Mapping):
            return NotImplemented
        return self._size == len(other) and self.as_dict() == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TextSources({self.as_dict()!r})"

    def __reduce__(self) -> tuple[type[TextSources], tuple[list[tuple[str, tuple[Provenance, ...]]]]]:
        return TextSources, (list(self.items()),)

    def changing(self, changed: Mapping[str, tuple[Provenance, ...]]) -> TextSources:
        """This map with the texts of ``changed`` given its provenance (new texts added)."""
        added = [t for t in changed if t not in self]
        known = (self._sources, self._n) if self._sources is not None else self._known
        with _APPENDING:  # the newest version grows its log; any other copies it first
            log = self._log
            if len(log.texts) != self._n:
                log = _TextLog()
                for text in self._texts():
                    log.append(text, self[text])
                known = (self._sources, len(log.texts)) if self._sources is not None else None
            append = log.append
            for text, value in changed.items():
                append(text, value)
            length = len(log.texts)
        out = TextSources.__new__(TextSources)
        out._log, out._n, out._size = log, length, self._size + len(added)
        out._best = out._sources = None
        out._known = known
        keys = self._keys
        out._keys = None
        if keys is not None and (not added or len(keys) <= _FEW_TEXTS):
            out._keys = tuple(sorted((*keys, *added))) if added else keys  # texts are distinct
        return out

    def since(self, older: TextSources) -> list[str] | None:
        """The texts whose provenance this map changed since ``older`` when it grew from ``older`` (then
        its other texts have ``older``'s provenance); None when that is not known."""
        log = self._log
        if older._log is log and older._n <= self._n:
            return log.texts[older._n : self._n]
        return None

    @property
    def sources(self) -> frozenset[str]:
        """The distinct source ids of every text's provenance."""
        if self._sources is None:
            known = self._known
            if known is None:
                self._sources = frozenset(map(_SOURCE_ID, chain.from_iterable(self._values())))
            else:  # an older version's, and those of the records the texts changed since gained
                upto = known[1]
                added: list[Iterable[Provenance]] = []
                for text in set(self._log.texts[upto : self._n]):
                    now, before = self._get(text), self._get(text, upto)
                    grown = (
                        now.since(before)
                        if isinstance(now, ProvenanceSet) and isinstance(before, ProvenanceSet)
                        else None
                    )
                    added.append(now if grown is None else grown)  # type: ignore[arg-type]
                self._sources = _with(known[0], map(_SOURCE_ID, chain.from_iterable(added)))
                self._known = None
        return self._sources


Mapping.register(TextSources)


def _name_sources(node: Node) -> Mapping[str, tuple[Provenance, ...]]:
    """The node's name sources, or (when it has none) its name and aliases backed by its provenance."""
    if node.name_sources:
        return node.name_sources
    return {name: _tuple(node.provenance) for name in (node.name, *node.aliases)}


def _summary_sources(node: Node) -> Mapping[str, tuple[Provenance, ...]]:
    if node.summary_sources or node.summary is None:
        return node.summary_sources
    return {node.summary: _tuple(node.provenance)}


def _union_sources(
    a: Mapping[str, tuple[Provenance, ...]], b: Mapping[str, tuple[Provenance, ...]]
) -> TextSources:
    """Every text of ``a`` and ``b`` (in text order) with the union of its provenance. Only ``b``'s texts
    are united and written (a hub's many texts are shared, see :class:`TextSources`), and the best text
    is found among ``a``'s best and ``b``'s texts (their support only grew) when ``a``'s is known."""
    base = a if isinstance(a, TextSources) else TextSources((k, union_provenance(a[k])) for k in sorted(a))
    changed = {}
    for k, v in b.items():
        old = base.get(k)
        grown = union_provenance(old if old is not None else (), v)
        if grown is not old:
            changed[k] = grown
    out = base.changing(changed) if changed else base
    best = base._best
    if best is not None and out and out._best is None:
        out._best = _best_of(out, [best, *b])
    return out


#: Invisible format characters (the common ones of Unicode category Cf): zero-width space and joiners,
#: direction marks, soft hyphen, word joiner, BOM. They make a name longer, not better.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def _plain(text: str) -> bool:
    """Whether ``text`` is in NFC (``"é"``, not ``"e\u0301"``) and holds no invisible format character."""
    return unicodedata.is_normalized("NFC", text) and _INVISIBLE.search(text) is None


def _best_of(sources: Mapping[str, tuple[Provenance, ...]], texts: Iterable[str]) -> str:
    """Of ``texts``: backed by most distinct sources; ties: plain (:func:`_plain`) first, then longest, then
    lexicographically smallest."""
    return min(texts, key=lambda t: (-support(sources[t]), not _plain(t), -len(t), t))


def _best_text(sources: Mapping[str, tuple[Provenance, ...]]) -> str:
    """Backed by most distinct sources; ties: plain, then longest, then lexicographically smallest."""
    if isinstance(sources, TextSources):
        if sources._best is None:
            sources._best = _best_of(sources, sources)
        return sources._best
    return _best_of(sources, sources)


def derive_surface(node: Node) -> Node:
    """Re-derive ``name``, ``aliases`` and ``summary`` from ``name_sources`` / ``summary_sources``.

    With no ``name_sources`` the node is returned unchanged.
    """
    if not node.name_sources:
        return node
    return node.model_copy(update=_surface(node.name_sources, node.summary_sources))


def _surface(
    name_sources: Mapping[str, tuple[Provenance, ...]], summary_sources: Mapping[str, tuple[Provenance, ...]]
) -> dict[str, str | tuple[str, ...] | None]:
    """The ``name``, ``aliases`` and ``summary`` that (non-empty) ``name_sources`` and ``summary_sources``
    give."""
    name = _best_text(name_sources)
    aliases = tuple(sorted(n for n in name_sources if n != name))
    summary = _best_text(summary_sources) if summary_sources else None
    return {"name": name, "aliases": aliases, "summary": summary}


def merge_node_data(existing: Node, incoming: Node) -> Node:
    """Fold ``incoming`` into ``existing`` (``existing.id`` kept); see the module docstring."""
    attributes, attribute_provenance, conflicts = _merged_attributes(existing, incoming)
    provenance = union_provenance(existing.provenance, incoming.provenance)
    node_type = _apply_type(
        _merged_type_state(existing, incoming, provenance), attribute_provenance, conflicts
    )
    name_sources = _union_sources(_name_sources(existing), _name_sources(incoming))  # never empty
    summary_sources = _union_sources(_summary_sources(existing), _summary_sources(incoming))
    # model_construct: every field comes from validated models (keeps ProvenanceSets, see above); the
    # surface is derived here, as derive_surface would, without a second copy of the node
    return Node.model_construct(
        id=existing.id,
        type=node_type,
        attributes=attributes,
        attribute_provenance=attribute_provenance,
        conflicts=conflicts,
        provenance=provenance,
        name_sources=name_sources,
        summary_sources=summary_sources,
        **_surface(name_sources, summary_sources),
    )


def merge_edge_data(existing: Edge, incoming: Edge) -> Edge:
    """Fold ``incoming`` into ``existing``: both must be the same (source, type, target)."""
    if existing.id != incoming.id:
        raise InputError(
            f"cannot merge different edges: {existing.source} -{existing.type}-> {existing.target} "
            f"and {incoming.source} -{incoming.type}-> {incoming.target}"
        )
    attributes, attribute_provenance, conflicts = _merged_attributes(existing, incoming)
    return existing.model_copy(
        update={
            "attributes": attributes,
            "attribute_provenance": attribute_provenance,
            "conflicts": conflicts,
            "provenance": union_provenance(existing.provenance, incoming.provenance),
        }
    )


def _without(provenance: Iterable[Provenance], source_id: str) -> tuple[Provenance, ...]:
    return tuple(p for p in provenance if p.source_id != source_id)


def _retract_state(state: _ValueState, source_id: str) -> _ValueState:
    kept = {k: (v, _without(p, source_id)) for k, (v, p) in state.items()}
    return {k: vp for k, vp in kept.items() if vp[1]}


def _retract_sources(
    sources: Mapping[str, tuple[Provenance, ...]], source_id: str
) -> dict[str, tuple[Provenance, ...]]:
    kept = {k: _without(p, source_id) for k, p in sources.items()}
    return {k: p for k, p in kept.items() if p}


def retract_source(element: _E, source_id: str) -> _E | None:
    """Remove every provenance from ``source_id``; None when the element has none left.

    Attributes left without sources are dropped, a conflict left with one value becomes a plain
    attribute, and a node's name, aliases and summary are re-derived.
    """
    if source_id not in source_ids(element):
        return element
    provenance = _without(element.provenance, source_id)
    if not provenance:
        return None
    keys = (set(element.attributes) | set(element.conflicts)) - {TYPE_CONFLICT_KEY}
    attributes, attribute_provenance, conflicts = _rebuild_attributes(
        {k: _retract_state(_attribute_state(element, k), source_id) for k in keys}
    )
    update: dict[str, object] = {
        "attributes": attributes,
        "attribute_provenance": attribute_provenance,
        "conflicts": conflicts,
        "provenance": provenance,
    }
    if isinstance(element, Edge):
        return element.model_copy(update=update)
    type_state = _retract_state(_type_state(element), source_id)
    update["type"] = _apply_type(type_state, attribute_provenance, conflicts)
    update["name_sources"] = _retract_sources(element.name_sources, source_id)
    summary_sources = _retract_sources(element.summary_sources, source_id)
    update["summary_sources"] = summary_sources
    if element.summary_sources:
        update["summary"] = _best_text(summary_sources) if summary_sources else None
    # With no name sources left the node keeps its current name (a node always has one).
    return derive_surface(element.model_copy(update=update))


def _group_sources(group: Iterable[Provenance]) -> AbstractSet[str]:
    return group.sources if isinstance(group, ProvenanceSet) else {p.source_id for p in group}


def _texts_sources(groups: Iterable[Iterable[Provenance]]) -> set[str]:
    found: set[str] = set()
    for group in groups:
        found |= _group_sources(group)
    return found


def source_ids(element: Node | Edge) -> set[str]:
    """Every source id an element cites (element, attribute, conflict, name and summary provenance).
    Sets that know their sources (:class:`ProvenanceSet`, :class:`TextSources`) are united whole: a
    hub's many names and summaries are not visited one by one."""
    found = set(_group_sources(element.provenance))
    for group in element.attribute_provenance.values():
        found |= _group_sources(group)
    for conflict in element.conflicts.values():
        found |= _texts_sources(cv.provenance for cv in conflict.values)
    if isinstance(element, Node):
        for texts in (element.name_sources, element.summary_sources):
            found |= texts.sources if isinstance(texts, TextSources) else _texts_sources(texts.values())
    return found


def grown_sources(old: Node | Edge, new: Node | Edge) -> set[str] | None:
    """Source ids ``new`` cites beyond ``old``'s, when each provenance set of ``old`` is part of the one
    ``new`` holds in its place (what merging anything into ``old`` gives): then ``source_ids(new)`` is
    ``source_ids(old)`` united with the result, which is part of it (and may repeat some of ``old``'s).
    None when that does not hold (a retraction, another element): compare :func:`source_ids` in full.

    Sets that grew by appends (:meth:`ProvenanceSet.since`) and texts a merge did not change
    (:meth:`TextSources.since`) are not visited: a merge into a hub costs what it added."""
    if type(old) is not type(new):
        return None
    found: set[str] = set()
    if not (
        _grown_group(old.provenance, new.provenance, found)
        and _grown_groups(old.attribute_provenance, new.attribute_provenance, found)
    ):
        return None
    if old.conflicts or new.conflicts:
        if old.conflicts.keys() - new.conflicts.keys():
            return None
        for key, conflict in new.conflicts.items():
            was = old.conflicts.get(key)
            before = {canonical_json(cv.value): cv.provenance for cv in was.values} if was else {}
            now = {canonical_json(cv.value): cv.provenance for cv in conflict.values}
            if not _grown_groups(before, now, found):
                return None
    if isinstance(old, Node) and isinstance(new, Node):
        pairs = ((old.name_sources, new.name_sources), (old.summary_sources, new.summary_sources))
        if not all(_grown_groups(texts, grown, found) for texts, grown in pairs):
            return None
    return found


def _grown_group(old: Iterable[Provenance], new: Iterable[Provenance], found: set[str]) -> bool:
    """Whether ``old``'s sources are all ``new``'s; adds to ``found`` what ``new`` may add."""
    if new is old:
        return True
    if isinstance(new, ProvenanceSet) and isinstance(old, ProvenanceSet):
        added = new.since(old)
        if added is not None:
            found.update(p.source_id for p in added)
            return True
    sources = _group_sources(new)
    if not _group_sources(old) <= sources:
        return False
    found |= sources
    return True


def _grown_groups(
    old: Mapping[str, Iterable[Provenance]], new: Mapping[str, Iterable[Provenance]], found: set[str]
) -> bool:
    """:func:`_grown_group` for every key of ``old`` and ``new`` (keys of ``old`` must stay)."""
    if new is old:
        return True
    changed = new.since(old) if isinstance(new, TextSources) and isinstance(old, TextSources) else None
    if changed is not None:
        keys: Iterable[str] = changed  # the other texts kept their sets
    elif old.keys() <= new.keys():
        keys = new
    else:
        return False
    return all(_grown_group(old.get(k, ()), new[k], found) for k in keys)


def rewired(edge: Edge, old: str, new: str) -> Edge:
    """``edge`` with endpoint ``old`` replaced by ``new`` (both ends of a self-loop)."""
    source = new if edge.source == old else edge.source
    target = new if edge.target == old else edge.target
    return edge.model_copy(update={"source": source, "target": target})
