"""Cleanup of a raw extraction: merge duplicate names, snake_case types, drop self-loops, add endpoints."""

from __future__ import annotations

from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation, Extraction
from graphwalk_core.ingest.text import normalize_name, snake_case
from graphwalk_core.model import GENERIC_TYPE
from graphwalk_core.stores.keys import MAX_TYPE_BYTES, utf8_size


def _merge(a: ExtractedEntity, b: ExtractedEntity) -> ExtractedEntity:
    """``a`` completed by ``b``: first real type, first description, attributes ``a`` lacks."""
    return a.model_copy(
        update={
            "type": a.type if a.type != GENERIC_TYPE else b.type,
            "description": a.description or b.description,
            "attributes": {**b.attributes, **a.attributes},
        }
    )


def clean_extraction(extraction: Extraction) -> Extraction:
    """A cleaned copy: one entity per normalized name (first spelling kept), snake_case types,
    relations between listed entities only (unlisted endpoints added as generic entities), no self-loops
    and no repeated relations. A type longer than a graph store keeps (``stores.keys.MAX_TYPE_BYTES``) is
    no type a model meant: such an entity is generic and such a relation is dropped.
    """
    entities: dict[str, ExtractedEntity] = {}
    for entity in extraction.entities:
        key = normalize_name(entity.name)
        if not key:
            continue
        kind = snake_case(entity.type)
        kind = kind if kind and utf8_size(kind) <= MAX_TYPE_BYTES else GENERIC_TYPE
        entity = entity.model_copy(update={"type": kind})
        entities[key] = _merge(entities[key], entity) if key in entities else entity
    relations: dict[tuple[str, str, str], ExtractedRelation] = {}
    for relation in extraction.relations:
        source, target = normalize_name(relation.source), normalize_name(relation.target)
        rel_type = snake_case(relation.type)
        if (
            not source
            or not target
            or not rel_type
            or source == target
            or utf8_size(rel_type) > MAX_TYPE_BYTES
        ):
            continue
        for key, name in ((source, relation.source), (target, relation.target)):
            if key not in entities:
                entities[key] = ExtractedEntity(name=name)
        key3 = (source, rel_type, target)
        if key3 not in relations:
            relations[key3] = relation.model_copy(
                update={"source": entities[source].name, "type": rel_type, "target": entities[target].name}
            )
    return Extraction(entities=list(entities.values()), relations=list(relations.values()))
