"""Core graph model: elements, hashing and the pure merge logic shared by every store."""

from graphwalk_core.model.elements import (
    GENERIC_TYPE,
    AttributeConflict,
    ConflictValue,
    Edge,
    EdgeId,
    JSONValue,
    Node,
    NodeId,
    Provenance,
    bulk_edge_id,
    edge_id,
)
from graphwalk_core.model.hashing import canonical_json, content_hash, text_hash

__all__ = [
    "GENERIC_TYPE",
    "AttributeConflict",
    "ConflictValue",
    "Edge",
    "EdgeId",
    "JSONValue",
    "Node",
    "NodeId",
    "Provenance",
    "bulk_edge_id",
    "canonical_json",
    "content_hash",
    "edge_id",
    "text_hash",
]
