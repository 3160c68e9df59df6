"""Resolution: node ids, incoming element data with provenance, and per-document writes and retraction.

Node ids. A routed NEW node gets ``n_`` + hash(normalized name). When routing says NEW but that id is
taken (the decider judged a same-named node to be a different entity), the id becomes ``nd_`` +
hash(normalized name, type), then ``nd_`` + hash(name, type, document, chunk, mention). Structured sources
pin their own ids (SQL: ``n_sql_`` + hash(source, table, primary key)).

Pinned nodes. A pinned node new to the graph takes over the routed node of its name that a mention would
have merged into (``Router``; ``absorb_nodes``), so a row and a text naming one entity give one node in
either order; a pinned node left without a row's provenance by a retraction is re-keyed as a routed node.

Canonical ids. An ``n_`` node merged under several names is re-keyed after every write to the hash of the
name its earliest source (lowest ``<source>/<document>``, then offset) gave it, which is the name a fresh
ingest in document order creates it with. So ids do not depend on which document came first or on a
deleted document that named the node (``canonical_node_id`` / ``rekey_node``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import takewhile
from typing import Any, TypeVar

from graphwalk_core.ingest.chunking import Chunk
from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation
from graphwalk_core.ingest.outputs import DocumentPlan, WriteCounts
from graphwalk_core.ingest.sources.sql import SQL_EXTRACTOR_PREFIX, SQL_NODE_PREFIX
from graphwalk_core.ingest.text import normalize_name
from graphwalk_core.model import Edge, EdgeId, Node, NodeId, Provenance, bulk_edge_id, content_hash
from graphwalk_core.model.merge import (
    ProvenanceSet,
    merge_edge_data,
    merge_node_data,
    retract_source,
    rewired,
)
from graphwalk_core.stores.base import GraphStore, get_edges, upsert_many

_E = TypeVar("_E", Node, Edge)


@lru_cache(maxsize=1 << 16)
def base_node_id(name: str) -> str:
    """The id a new node named ``name`` gets when it is free (remembered for recent names: every write
    re-derives the canonical id of each node it touches)."""
    return "n_" + content_hash(normalize_name(name))[:24]


def new_node_id(name: str, type: str, salt: str, taken: Callable[[str], bool]) -> str:
    """The first free id of: hash(name), hash(name, type), hash(name, type, salt)."""
    key = normalize_name(name)
    for candidate in (
        base_node_id(name),
        "nd_" + content_hash([key, type])[:24],
        "nd_" + content_hash([key, type, salt])[:24],
    ):
        if not taken(candidate):
            return candidate
    raise AssertionError(f"node id collision for {name!r} ({salt})")  # pragma: no cover


def is_pinned(node_id: str) -> bool:
    """Whether ``node_id`` is a structured source's pinned id (a SQL row's)."""
    return node_id.startswith(SQL_NODE_PREFIX)


def _row_backed(node: Node) -> bool:
    """Whether a pinned node still has provenance from a row (its own, or one referring to it)."""
    return any(p.extractor.startswith(SQL_EXTRACTOR_PREFIX) for p in node.provenance)


def _first_source(provenance: tuple[Provenance, ...]) -> tuple[str, int]:
    if isinstance(provenance, ProvenanceSet) and provenance:  # sorted by source: the first one's records
        first = provenance[0].source_id
        provenance = tuple(takewhile(lambda p: p.source_id == first, provenance))
    return min((p.source_id, p.start if p.start is not None else -1) for p in provenance)


def canonical_node_id(node: Node, *, retracted: bool = False) -> str | None:
    """The id ``node`` should have, when that differs from its id (only for ``n_`` name-hash ids, and
    pinned ids a ``retracted`` node keeps no row's provenance under: it is a routed node now).

    It is the hash of the name backed by the earliest source; when several names tie (one chunk), the
    current id is kept if it is one of them, else the smallest name wins.
    """
    if is_pinned(node.id) and (not retracted or _row_backed(node)):
        return None
    if not node.id.startswith("n_") or not node.name_sources:
        return None
    firsts = {name: _first_source(prov) for name, prov in node.name_sources.items() if prov}
    if not firsts:
        return None
    earliest = min(firsts.values())
    tied = sorted(name for name, first in firsts.items() if first == earliest)
    wanted = {base_node_id(name) for name in tied}
    if node.id in wanted:
        return None
    return base_node_id(tied[0])


async def rekey_node(store: GraphStore, node: Node, new_id: str) -> None:
    """Move ``node`` to ``new_id`` (a free id): copy it, rewire its edges, delete the old id."""
    await store.upsert_node(node.model_copy(update={"id": new_id}))
    seen: set[str] = set()
    for neighbor in await store.neighbors(node.id):
        edge = neighbor.edge
        if edge.id in seen:
            continue
        seen.add(edge.id)
        await store.upsert_edge(rewired(edge, node.id, new_id))
    await store.delete_node(node.id)


def mention_node(node_id: str, entity: ExtractedEntity, provenance: Provenance) -> Node:
    """The incoming data one mention brings to node ``node_id`` (every value backed by ``provenance``)."""
    prov = (provenance,)
    # model_construct: every field comes from validated models (a hot path when routing large corpora).
    # Every field is given: a field left to its default_factory costs pydantic a signature inspection.
    return Node.model_construct(
        id=node_id,
        type=entity.type,
        name=entity.name,
        summary=entity.description,
        attributes=dict(entity.attributes),
        attribute_provenance={k: prov for k in entity.attributes},
        provenance=prov,
        name_sources={entity.name: prov},
        summary_sources={entity.description: prov} if entity.description else {},
        aliases=(),
        conflicts={},
    )


def mention_provenance(chunk: Chunk, source: str, extractor: str, probability: float) -> Provenance:
    """What one routed mention is backed by: its chunk, extractor and routing probability."""
    return Provenance(
        source_id=source,
        content_hash=chunk.content_hash,
        extractor=extractor,
        confidence=round(probability, 6),
        start=chunk.start,
        end=chunk.end,
    )


def chunk_edges(
    relations: Sequence[ExtractedRelation],
    entities: Sequence[ExtractedEntity],
    targets: Sequence[str],
    nodes: Sequence[Node],
) -> list[Edge]:
    """A chunk's relations as edges between the nodes its mentions were routed to.

    An endpoint is found by the mention's name (exact, then normalized) or pinned id, first mention
    first; a relation to an unknown mention or from a node to itself is dropped. The edge is backed by
    the less confident endpoint's provenance.
    """
    by_name: dict[str, tuple[str, Provenance]] = {}
    for entity, target, node in zip(entities, targets, nodes, strict=True):
        by_name.setdefault(normalize_name(entity.name), (target, node.provenance[0]))
        if entity.node_id is not None:
            by_name.setdefault(entity.node_id, (target, node.provenance[0]))
    edges: list[Edge] = []
    for relation in relations:
        source = by_name.get(relation.source) or by_name.get(normalize_name(relation.source))
        target = by_name.get(relation.target) or by_name.get(normalize_name(relation.target))
        if source is None or target is None or source[0] == target[0]:
            continue
        provenance = source[1] if source[1].confidence <= target[1].confidence else target[1]
        edges.append(relation_edge(source[0], target[0], relation, provenance))
    return edges


def relation_edge(source: str, target: str, relation: ExtractedRelation, provenance: Provenance) -> Edge:
    prov = (provenance,)
    return Edge.model_construct(
        source=source,
        target=target,
        type=relation.type,
        attributes=dict(relation.attributes),
        attribute_provenance={k: prov for k in relation.attributes},
        conflicts={},
        provenance=prov,
    )


async def retract_document(store: GraphStore, source_id: str, counts: WriteCounts) -> set[str]:
    """Remove exactly the provenance of ``source_id`` (``<source>/<document>``) from the store.

    Elements left without provenance are deleted; the others lose that source's attribute values,
    names and summaries, which :func:`retract_source` re-derives (a lone conflict value is promoted).
    The survivors are written in one batch; a deleted node takes its remaining edges with it.
    """
    nodes, edges = await store.elements_from_source(source_id)
    kept: dict[str, list[Any]] = {"edges": [], "nodes": []}
    dead_nodes: list[str] = []
    for kind, elements in (("edges", edges), ("nodes", nodes)):  # edges first: a node may lose its last
        for element in sorted(elements, key=lambda e: e.id):
            survivor = retract_source(element, source_id)
            outcome = "deleted" if survivor is None else "retracted"
            setattr(counts, f"{kind}_{outcome}", getattr(counts, f"{kind}_{outcome}") + 1)
            if survivor is not None:
                kept[kind].append(survivor)
            elif kind == "edges":
                await store.delete_edge(element.id)
            else:
                dead_nodes.append(element.id)
    await upsert_many(store, kept["nodes"], kept["edges"])
    for node_id in dead_nodes:
        await store.delete_node(node_id)
    return {n.id for n in kept["nodes"]}


def fold_by_id(folded: dict[str, _E], elements: Iterable[_E], merge: Callable[[_E, _E], _E]) -> dict[str, _E]:
    """Fold ``elements`` into ``folded`` (by id, first seen first), each merged into the one of its id
    folded before it, in order; returns ``folded``."""
    for element in elements:
        key = element.id  # an edge's is computed on every access
        seen = folded.get(key)
        folded[key] = element if seen is None else merge(seen, element)
    return folded


async def write_elements(
    store: GraphStore, nodes: list[Node], edges: list[Edge], counts: WriteCounts
) -> set[str]:
    """Fold incoming nodes, then edges, into the store with ``merge_node_data`` / ``merge_edge_data``.

    A document's repeated elements are folded together first; the stored ones are read in one batch
    and everything is written in one batch per kind (set-based on stores offering ``BulkWrites``).
    """
    folded = fold_by_id({}, nodes, merge_node_data)
    stored = await store.get_nodes(list(folded))
    out_nodes: list[Node] = []
    for node_id, node in folded.items():
        existing = stored.get(node_id)
        if existing is None:
            # folded with itself: the canonical form merges and retractions produce (e.g. type backing)
            out_nodes.append(merge_node_data(node, node))
            counts.nodes_added += 1
            continue
        merged = merge_node_data(existing, node)
        counts.conflicts += max(0, len(merged.conflicts) - len(existing.conflicts))
        counts.nodes_merged += 1
        out_nodes.append(merged)
    await upsert_many(store, out_nodes)
    folded_edges = fold_by_id({}, edges, merge_edge_data)
    stored_edges = await get_edges(store, list(folded_edges))
    out_edges: list[Edge] = []
    for edge_id, edge in folded_edges.items():
        existing_edge = stored_edges.get(edge_id)
        if existing_edge is None:
            out_edges.append(edge)
            counts.edges_added += 1
            continue
        merged_edge = merge_edge_data(existing_edge, edge)
        counts.conflicts += max(0, len(merged_edge.conflicts) - len(existing_edge.conflicts))
        counts.edges_merged += 1
        out_edges.append(merged_edge)
    await upsert_many(store, (), out_edges)
    return set(folded)


async def canonicalize(
    store: GraphStore, node_ids: set[str], renames: dict[str, str], retracted: Collection[str] = ()
) -> None:
    """Re-key the touched nodes whose canonical id differs (when that id is free); record renames.
    ``retracted``: the touched nodes that lost provenance (only those can lose their pinning row).

    The touched nodes and the ids they want are read in one batch each; a re-key frees its old id and
    takes its new one for the nodes after it (in id order).
    """
    touched = await store.get_nodes(sorted(node_ids))
    wanted = {
        node_id: canonical_node_id(node, retracted=node_id in retracted) for node_id, node in touched.items()
    }
    taken = set(await store.get_nodes(sorted({w for w in wanted.values() if w is not None})))
    for node_id, node in touched.items():
        new_id = wanted[node_id]
        if new_id is None or new_id in taken:
            continue
        await rekey_node(store, node, new_id)
        taken.add(new_id)
        taken.discard(node_id)
        _record_rename(renames, node_id, new_id)


def _record_rename(renames: dict[str, str], old: str, new: str) -> None:
    """``old`` is ``new`` now, and so is every id renamed to ``old`` earlier in the run."""
    renames[old] = new
    for earlier, target in renames.items():
        if target == old:
            renames[earlier] = new


async def absorb_nodes(store: GraphStore, absorbed: dict[str, str], renames: dict[str, str]) -> set[str]:
    """Fold each routed node of ``absorbed`` into the pinned node that takes it over (both written by
    now; ids re-keyed earlier in the run followed), recording the rename; returns the ids involved."""
    involved: set[str] = set()
    for old, pinned in sorted(absorbed.items()):
        old = renames.get(old, old)
        if old == pinned or len(await store.get_nodes([old, pinned])) < 2:
            continue
        await store.merge_nodes(pinned, old)
        involved |= {old, pinned}
        _record_rename(renames, old, pinned)
    return involved


def planned_ids(
    documents: Sequence[DocumentPlan], renames: dict[str, str]
) -> tuple[Iterator[NodeId], Iterator[EdgeId]]:
    """The ids of the nodes and edges ``documents`` fold into the store (those :func:`write_elements`
    reads), with the ids re-keyed so far replaced as :func:`renamed` replaces them, repeats included: lazy,
    so a store that does not prefetch never computes them."""
    nodes = (renames.get(n.id, n.id) for doc in documents for n in doc.nodes)
    edges = (
        bulk_edge_id(renames.get(e.source, e.source), e.type, renames.get(e.target, e.target))
        for doc in documents
        for e in doc.edges
    )
    return nodes, edges


def renamed(nodes: list[Node], edges: list[Edge], renames: dict[str, str]) -> tuple[list[Node], list[Edge]]:
    """A document's planned elements with ids re-keyed earlier in the run replaced."""
    if not renames:
        return nodes, edges
    nodes = [n.model_copy(update={"id": renames[n.id]}) if n.id in renames else n for n in nodes]
    out: list[Edge] = []
    for edge in edges:
        for old in (edge.source, edge.target):
            if old in renames:
                edge = rewired(edge, old, renames[old])
        out.append(edge)
    return nodes, out
