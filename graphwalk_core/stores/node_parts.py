"""A large node's rows in the SQL store: a small head plus parts that later writes append to.

A hub node carries a provenance record, a name source and a summary candidate per mention, so its JSON
grows with the corpus, and a store that rewrote it whole each time it merged would write more per
document the larger the graph. A node with more than :data:`SPLIT_RECORDS` provenance records is
stored instead as a head (the node with its four record fields emptied, prefixed by :data:`HEAD`, so
code that does not know parts fails on it instead of reading a node without its records) and parts,
each holding records (:class:`NodeRecords`): the first one every record, each later one only the records
a write added. A write that only adds records to the node the tables hold appends one part (see
:func:`added_records`); any other change, or the :data:`MAX_PARTS` th part, rewrites the parts as one.

The node the rows give (:func:`assemble`) equals, field by field and in its JSON, the node written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from operator import attrgetter, is_not, not_

from pydantic import BaseModel, ConfigDict, Field

from graphwalk_core.model import Node, Provenance
from graphwalk_core.model.elements import ProvenanceGroups, ProvenanceTuple
from graphwalk_core.model.merge import ProvenanceSet, TextSources, union_provenance

#: A node with more provenance records than this is stored as a head and parts.
SPLIT_RECORDS = 8
#: Parts a node may have before a write rewrites them as one (bounds what a read must unite).
MAX_PARTS = 32
#: The first characters of a head row's ``data``.
HEAD = "parts:"

_Groups = Mapping[str, Sequence[Provenance]]
#: A record's field values: equal records have equal keys (cheaper to hash and compare than the records).
_record_key = attrgetter(*Provenance.model_fields)
#: The record objects already assembled, by field values (see :func:`assemble`).
RecordsSeen = dict[tuple[object, ...], Provenance]


class NodeRecords(BaseModel):
    """One part: records of a node's four record fields."""

    model_config = ConfigDict(frozen=True)

    provenance: ProvenanceTuple = ()
    attribute_provenance: ProvenanceGroups = Field(default_factory=dict)
    name_sources: ProvenanceGroups = Field(default_factory=dict)
    summary_sources: ProvenanceGroups = Field(default_factory=dict)


def is_large(node: Node) -> bool:
    """Whether ``node`` is stored as a head and parts when written whole."""
    return len(node.provenance) > SPLIT_RECORDS


def head(node: Node) -> str:
    """The head row's ``data``: ``node`` without its records (its attribute keys kept, in order)."""
    bare = node.model_copy(
        update={
            "provenance": (),
            "attribute_provenance": dict.fromkeys(node.attribute_provenance, ()),
            "name_sources": {},
            "summary_sources": {},
        }
    )
    return HEAD + bare.model_dump_json()


def whole(node: Node) -> str:
    """The one part holding every record of ``node``, as given."""
    return NodeRecords.model_construct(
        provenance=node.provenance,
        attribute_provenance=node.attribute_provenance,
        name_sources=node.name_sources,
        summary_sources=node.summary_sources,
    ).model_dump_json()


def _added(old: Sequence[Provenance], new: Sequence[Provenance]) -> list[Provenance] | None:
    """The records of the sorted set ``new`` that are not (the very objects) in ``old``; None when a
    record of ``old`` is missing from ``new`` or ``new`` is not a sorted set."""
    if new is old:
        return []
    if not isinstance(new, ProvenanceSet):
        return None
    if isinstance(old, ProvenanceSet):
        appended = new.since(old)  # grown by appends from ``old``: what it added, without a look at the rest
        if appended is not None:
            return list(appended)
    known = set(map(id, old))
    fresh = list(compress(new, map(not_, map(known.__contains__, map(id, new)))))
    return fresh if len(new) - len(fresh) == len(old) else None


def _added_groups(old: _Groups, new: _Groups) -> dict[str, tuple[Provenance, ...]] | None:
    """Per key, the records ``new`` adds to ``old`` (see :func:`_added`); None unless ``new`` keeps every
    key of ``old``."""
    if new is old:
        return {}
    texts = new.since(old) if isinstance(new, TextSources) and isinstance(old, TextSources) else None
    if texts is not None:  # grown from ``old``: only the texts it changed can add records
        changed: Iterable[tuple[str, Sequence[Provenance]]] = ((k, new[k]) for k in dict.fromkeys(texts))
    elif not old.keys() <= new.keys():
        return None
    else:
        changed = compress(new.items(), map(is_not, new.values(), map(old.get, new)))
    out: dict[str, tuple[Provenance, ...]] = {}
    for key, records in changed:
        fresh = _added(old.get(key, ()), records)
        if fresh is None:
            return None
        if fresh:
            out[key] = tuple(fresh)
    return out


def added_records(old: Node, new: Node) -> str | None:
    """The part that makes the rows of ``old`` give ``new``, when ``new`` only adds records to ``old``
    (and keeps them in the order :func:`assemble` gives: sorted sets, texts in text order); else None."""
    if not (isinstance(new.name_sources, TextSources) and isinstance(new.summary_sources, TextSources)):
        return None
    if not all(isinstance(v, ProvenanceSet) for v in new.attribute_provenance.values()):
        return None
    provenance = _added(old.provenance, new.provenance)
    attributes = _added_groups(old.attribute_provenance, new.attribute_provenance)
    names = _added_groups(old.name_sources, new.name_sources)
    summaries = _added_groups(old.summary_sources, new.summary_sources)
    if provenance is None or attributes is None or names is None or summaries is None:
        return None
    return NodeRecords.model_construct(
        provenance=tuple(provenance),
        attribute_provenance=attributes,
        name_sources=names,
        summary_sources=summaries,
    ).model_dump_json()


def _united(parts: Sequence[NodeRecords], field: str) -> dict[str, list[Sequence[Provenance]]]:
    groups: dict[str, list[Sequence[Provenance]]] = {}
    for part in parts:
        for key, records in getattr(part, field).items():
            groups.setdefault(key, []).append(records)
    return groups


def _sharing(part: NodeRecords, seen: RecordsSeen) -> NodeRecords:
    """``part`` with each record one object per value across everything ``seen`` (JSON gives a new object
    for every occurrence, and a node repeats each record in its provenance, names, summaries and
    attributes: a parsed hub held about nine objects per record)."""

    def one(records: Sequence[Provenance]) -> tuple[Provenance, ...]:
        return tuple([seen.setdefault(_record_key(p), p) for p in records])

    def each(groups: Mapping[str, Sequence[Provenance]]) -> dict[str, tuple[Provenance, ...]]:
        return {key: one(records) for key, records in groups.items()}

    return NodeRecords.model_construct(
        provenance=one(part.provenance),
        attribute_provenance=each(part.attribute_provenance),
        name_sources=each(part.name_sources),
        summary_sources=each(part.summary_sources),
    )


def assemble(head_data: str, parts_data: Sequence[str], seen: RecordsSeen | None = None) -> Node:
    """The node of a head row and its parts (in part order), each record one object (across the nodes
    assembled with one ``seen`` map, too: a chunk's record is in every hub the chunk mentions)."""
    bare = Node.model_validate_json(head_data[len(HEAD) :])
    seen = {} if seen is None else seen
    parts = [_sharing(NodeRecords.model_validate_json(data), seen) for data in parts_data]
    if len(parts) == 1:  # every record as written
        [only] = parts
        return bare.model_copy(
            update={
                "provenance": only.provenance,
                "attribute_provenance": only.attribute_provenance,
                "name_sources": only.name_sources,
                "summary_sources": only.summary_sources,
            }
        )
    attributes = _united(parts, "attribute_provenance")
    texts = [_united(parts, field) for field in ("name_sources", "summary_sources")]
    names, summaries = (TextSources((k, union_provenance(*g[k])) for k in sorted(g)) for g in texts)
    return bare.model_copy(
        update={
            "provenance": union_provenance(*(p.provenance for p in parts)),
            "attribute_provenance": {
                k: union_provenance(*attributes.get(k, ())) for k in bare.attribute_provenance
            },
            "name_sources": names,
            "summary_sources": summaries,
        }
    )
