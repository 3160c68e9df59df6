"""Resolution: node ids, incoming element data with provenance, and per-document writes and retraction.

Node ids. A routed NEW node gets ``n_`` + hash(normalized name): it does not depend on which document
created it, so incremental and fresh ingests agree. When routing says NEW but that id is taken (the
decider judged a same-named node to be a different entity), the id becomes hash(normalized name, type),
then hash(normalized name, type, document, chunk, mention): deterministic for a given routing. Structured
sources pin their own ids (SQL: hash(source, table, primary key)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation
from graphwalk_core.ingest.text import normalize_name
from graphwalk_core.model import Edge, Node, Provenance, content_hash
from graphwalk_core.model.merge import merge_edge_data, merge_node_data, retract_source
from graphwalk_core.stores.base import GraphStore


def base_node_id(name: str) -> str:
    """The id a new node named ``name`` gets when it is free."""
    return "n_" + content_hash(normalize_name(name))[:24]


def new_node_id(name: str, type: str, salt: str, taken: Callable[[str], bool]) -> str:
    """The first free id of: hash(name), hash(name, type), hash(name, type, salt)."""
    key = normalize_name(name)
    for candidate in (
        base_node_id(name),
        "n_" + content_hash([key, type])[:24],
        "n_" + content_hash([key, type, salt])[:24],
    ):
        if not taken(candidate):
            return candidate
    raise AssertionError(f"node id collision for {name!r} ({salt})")  # pragma: no cover


def mention_node(node_id: str, entity: ExtractedEntity, provenance: Provenance) -> Node:
    """The incoming data one mention brings to node ``node_id`` (every value backed by ``provenance``)."""
    prov = (provenance,)
    return Node(
        id=node_id,
        type=entity.type,
        name=entity.name,
        summary=entity.description,
        attributes=dict(entity.attributes),
        attribute_provenance={k: prov for k in entity.attributes},
        provenance=prov,
        name_sources={entity.name: prov},
        summary_sources={entity.description: prov} if entity.description else {},
    )


def relation_edge(source: str, target: str, relation: ExtractedRelation, provenance: Provenance) -> Edge:
    prov = (provenance,)
    return Edge(
        source=source,
        target=target,
        type=relation.type,
        attributes=dict(relation.attributes),
        attribute_provenance={k: prov for k in relation.attributes},
        provenance=prov,
    )


@dataclass
class WriteCounts:
    nodes_added: int = 0
    nodes_merged: int = 0
    nodes_retracted: int = 0
    nodes_deleted: int = 0
    edges_added: int = 0
    edges_merged: int = 0
    edges_retracted: int = 0
    edges_deleted: int = 0
    conflicts: int = 0


async def retract_document(store: GraphStore, source_id: str, counts: WriteCounts) -> None:
    """Remove exactly the provenance of ``source_id`` (``<source>/<document>``) from the store.

    Elements left without provenance are deleted; the others lose that source's attribute values,
    names and summaries, which :func:`retract_source` re-derives (a lone conflict value is promoted).
    """
    nodes, edges = await store.elements_from_source(source_id)
    for edge in sorted(edges, key=lambda e: e.id):
        kept = retract_source(edge, source_id)
        if kept is None:
            await store.delete_edge(edge.id)
            counts.edges_deleted += 1
        else:
            await store.upsert_edge(kept)
            counts.edges_retracted += 1
    for node in sorted(nodes, key=lambda n: n.id):
        kept = retract_source(node, source_id)
        if kept is None:
            await store.delete_node(node.id)
            counts.nodes_deleted += 1
        else:
            await store.upsert_node(kept)
            counts.nodes_retracted += 1


async def write_elements(
    store: GraphStore, nodes: list[Node], edges: list[Edge], counts: WriteCounts
) -> None:
    """Fold incoming nodes, then edges, into the store with ``merge_node_data`` / ``merge_edge_data``.

    A document's repeated elements are folded together first, so each element is read and written once.
    """
    folded: dict[str, Node] = {}
    for node in nodes:
        folded[node.id] = merge_node_data(folded[node.id], node) if node.id in folded else node
    stored = await store.get_nodes(list(folded))
    for node_id, node in folded.items():
        existing = stored.get(node_id)
        if existing is None:
            # folded with itself: the canonical form merges and retractions produce (e.g. type backing)
            await store.upsert_node(merge_node_data(node, node))
            counts.nodes_added += 1
            continue
        merged = merge_node_data(existing, node)
        counts.conflicts += max(0, len(merged.conflicts) - len(existing.conflicts))
        counts.nodes_merged += 1
        await store.upsert_node(merged)
    folded_edges: dict[str, Edge] = {}
    for edge in edges:
        folded_edges[edge.id] = (
            merge_edge_data(folded_edges[edge.id], edge) if edge.id in folded_edges else edge
        )
    for edge in folded_edges.values():
        existing_edge = await store.get_edge(edge.id)
        if existing_edge is None:
            await store.upsert_edge(edge)
            counts.edges_added += 1
            continue
        merged_edge = merge_edge_data(existing_edge, edge)
        counts.conflicts += max(0, len(merged_edge.conflicts) - len(existing_edge.conflicts))
        counts.edges_merged += 1
        await store.upsert_edge(merged_edge)
