"""Pure merge logic shared by every store: union provenance, record conflicts, derive surface names.

Merging is order-independent: merging A into B gives the same element as merging B into A (apart
from the id, which is the first argument's), and merge order over three or more elements does not
matter either. Nothing is silently overwritten: disagreeing attribute values (and disagreeing real
types) become :class:`AttributeConflict` records, each value with the provenance backing it.

Conventions: an attribute missing from ``attribute_provenance`` is backed by the element's provenance
(merges write it explicitly); a node without ``name_sources`` (or ``summary_sources``) counts its
name and aliases (or summary) as backed by its provenance; "backed by most sources" counts distinct
``source_id``\ s, ties going to the smallest canonical JSON (values) or the longest, then
lexicographically smallest text (names, summaries).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TypeVar

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


class ProvenanceSet(tuple[Provenance, ...]):
    """A provenance tuple known to be deduplicated and sorted by ``Provenance.sort_key`` (what
    :func:`union_provenance` returns), with its support counted once. Adding a few records to a large
    set costs a few comparisons and one copy, not a re-sort: a hub node mentioned by every document
    would otherwise make each merge as slow as its provenance is long (quadratic ingests). It equals,
    hashes and serializes as the plain tuple."""

    _support: int | None = None
    _sources: frozenset[str] | None = None

    @classmethod
    def of(cls, provenance: Iterable[Provenance]) -> ProvenanceSet:
        """``provenance`` deduplicated and sorted."""
        if isinstance(provenance, ProvenanceSet):
            return provenance
        items = provenance if isinstance(provenance, (tuple, list)) else list(provenance)
        if len(items) < 2:  # sorted and distinct as it is
            return cls(items)
        return cls(sorted(set(items), key=Provenance.sort_key))

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
            self._sources = frozenset(p.source_id for p in self)
        return self._sources

    def adding(self, items: Iterable[Provenance]) -> ProvenanceSet:
        """This set with ``items`` (sorted by ``Provenance.sort_key``) added: the result :meth:`of` gives,
        by insertion, in one copy. Its support and (when this set knows them) sources are updated from
        the added records' neighbours, not recounted."""
        records = list(self)
        support = self.support
        added: list[str] = []
        at = 0
        last = records[-1].sort_key() if records else None
        for item in items:  # sorted: each one goes at or after the previous one's run of equal keys
            key = item.sort_key()
            if last is None or key > last:  # after every record (a later document's, most often)
                if not records or records[-1].source_id != item.source_id:
                    support += 1
                    added.append(item.source_id)
                records.append(item)
                last, at = key, len(records) - 1
                continue
            at = bisect_left(records, key, at, key=Provenance.sort_key)
            end = at
            while end < len(records) and records[end].sort_key() == key:
                if records[end] == item:
                    break
                end += 1
            else:
                source = item.source_id
                near = records[at - 1 : at + 1] if at else records[:1]
                if all(p.source_id != source for p in near):
                    support += 1
                    added.append(source)
                records.insert(end, item)
        if len(records) == len(self):
            return self
        out = ProvenanceSet(records)
        out._support = support
        sources = self._sources
        if sources is not None:
            out._sources = sources.union(added) if added else sources
        return out


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
        else:
            rest.extend(group)
    if largest is None:
        return ProvenanceSet.of(rest)
    if not rest:
        return largest
    if len(rest) == 1:
        return largest.adding(rest)
    if len(rest) <= _FEW_INSERTS:
        return largest.adding(sorted(set(rest), key=Provenance.sort_key))
    rest.extend(largest)
    return ProvenanceSet.of(rest)


def support(provenance: Iterable[Provenance]) -> int:
    """How many distinct sources back a value."""
    if isinstance(provenance, ProvenanceSet):
        return provenance.support
    return len({p.source_id for p in provenance})


def _tuple(provenance: Iterable[Provenance]) -> tuple[Provenance, ...]:
    """``provenance`` as a tuple (a ProvenanceSet stays one)."""
    return provenance if isinstance(provenance, tuple) else tuple(provenance)


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


class TextSources(dict[str, tuple[Provenance, ...]]):
    """Texts in text order, each with the :class:`ProvenanceSet` backing it (what :func:`_union_sources`
    returns), remembering its best text (see :func:`_best_text`) once known. A hub node gets a summary
    per mention: recounting every text's support on each merge would make merges as slow as the node
    is popular. It equals, pickles and serializes as the plain dict; it is never changed once built.
    Its distinct source ids are kept too (grown by each merge, not re-united per text)."""

    _best: str | None = None
    _sources: frozenset[str] | None = None

    @property
    def sources(self) -> frozenset[str]:
        """The distinct source ids of every text's provenance."""
        if self._sources is None:
            self._sources = frozenset(_texts_sources(self.values()))
        return self._sources


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
    are united (a hub's many texts keep their sets), and the best text is found among ``a``'s best
    and ``b``'s texts (their support only grew) when ``a``'s is known."""
    if isinstance(a, TextSources):
        out = TextSources(a)
    else:
        out = TextSources((k, union_provenance(a[k])) for k in sorted(a))
    last = next(reversed(out), None)
    in_order = True
    for k, v in b.items():
        old = out.get(k)
        if old is None:
            in_order = in_order and (last is None or k > last)
            last = k
        out[k] = union_provenance(old if old is not None else (), v)
    if not in_order:  # new texts went in at the end: back to text order (texts are distinct)
        out = TextSources(sorted(out.items()))
    best = a._best if isinstance(a, TextSources) else None
    if best is not None and out:
        out._best = _best_of(out, [best, *b])
    known = a._sources if isinstance(a, TextSources) else None
    if known is not None:  # a's texts kept their provenance or grew by b's: a's sources and b's
        grown = _texts_sources(b.values())
        out._sources = known if grown <= known else known | grown
    return out


def _best_of(sources: Mapping[str, tuple[Provenance, ...]], texts: Iterable[str]) -> str:
    """Of ``texts``: backed by most distinct sources; ties: longest, then lexicographically smallest."""
    return min(texts, key=lambda t: (-support(sources[t]), -len(t), t))


def _best_text(sources: Mapping[str, tuple[Provenance, ...]]) -> str:
    """Backed by most distinct sources; ties: longest, then lexicographically smallest."""
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


def rewired(edge: Edge, old: str, new: str) -> Edge:
    """``edge`` with endpoint ``old`` replaced by ``new`` (both ends of a self-loop)."""
    source = new if edge.source == old else edge.source
    target = new if edge.target == old else edge.target
    return edge.model_copy(update={"source": source, "target": target})
