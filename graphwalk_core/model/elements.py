"""The graph's elements: nodes, edges, provenance and attribute conflicts (all frozen)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from json.encoder import encode_basestring as _json_string  # type: ignore[attr-defined]
from typing import Annotated, Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field

from graphwalk_core.model.hashing import content_hash

JSONValue: TypeAlias = Any
NodeId: TypeAlias = str
EdgeId: TypeAlias = str

#: The type given to an entity whose real type is unknown; it never conflicts with a real type.
GENERIC_TYPE = "entity"


class Frozen(BaseModel):
    """A frozen model whose instances that set every field share one ``__pydantic_fields_set__``.

    pydantic gives each instance its own set of the fields it was given: 728 bytes from five names on,
    more than the rest of a parsed provenance record, and a hub node holds thousands of records. A frozen
    instance never changes that set in place (copies get their own), and adding a field's name to a set
    that holds every name changes nothing, so sharing it changes no behaviour."""

    model_config = ConfigDict(frozen=True)
    #: The names of every field of the class: the set its instances that set them all share.
    _every_field: ClassVar[set[str]] = set()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._every_field = set(cls.model_fields)

    def model_post_init(self, context: Any, /) -> None:
        every = self._every_field
        if self.__pydantic_fields_set__ == every:
            object.__setattr__(self, "__pydantic_fields_set__", every)


def edge_id(source: NodeId, type: str, target: NodeId) -> EdgeId:
    """Deterministic edge id: a short hash of (source, type, target)."""
    return "e_" + content_hash([source, type, target])[:24]


#: Edge ids remembered, the most recently used first: a routing window's edges (about 6,000 at 256 2Wiki
#: passages) fit; 65,536 held ~15 MB more and missed 4 % less (docs/results.md, fourteenth pass).
EDGE_ID_CACHE = 1 << 14


@lru_cache(maxsize=EDGE_ID_CACHE)
def bulk_edge_id(source: NodeId, type: str, target: NodeId) -> EdgeId:
    """Exactly :func:`edge_id`, several times faster for bulk loads and exports (and remembered for the
    most recent ids: ``Edge.id`` is computed on every access).

    ``canonical_json`` of a list of strings is ``[`` + each string JSON-encoded (non-ASCII kept) + ``]``.
    """
    data = f"[{_json_string(source)},{_json_string(type)},{_json_string(target)}]".encode()
    return "e_" + hashlib.sha256(data).hexdigest()[:24]


class Provenance(Frozen):
    """Where a node, edge or attribute value came from.

    ``source_id`` is ``<source>/<document id>``; ``content_hash`` identifies the chunk or record.
    No timestamp lives here, so re-ingesting the same content gives identical provenance
    (ingestion times are kept in the ledger).
    """

    source_id: str
    content_hash: str = ""
    extractor: str = ""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    start: int | None = None
    end: int | None = None

    def sort_key(self) -> tuple[str, str, str, int, int, bool, bool, float]:
        """A total order over every field: provenance sets sort the same in every process."""
        return (
            self.source_id,
            self.content_hash,
            self.extractor,
            self.start or -1,
            self.end or -1,
            self.start is None,
            self.end is None,
            self.confidence,
        )


def plain_provenance(group: Iterable[Provenance]) -> tuple[Provenance, ...]:
    """``group`` as the plain tuple it serializes as (merges keep provenance in shared, growable sets)."""
    return group if type(group) is tuple else tuple(group)


def plain_groups(groups: Mapping[str, Iterable[Provenance]]) -> dict[str, tuple[Provenance, ...]]:
    """``groups`` as the plain dict of plain tuples it serializes as (in its own key order)."""
    if type(groups) is dict:
        if all(type(group) is tuple for group in groups.values()):
            return groups  # type: ignore[return-value]
    else:
        as_dict = getattr(groups, "as_dict", None)  # a mapping that knows its plain form
        if as_dict is not None:
            return as_dict()  # type: ignore[no-any-return]
    return {key: group if type(group) is tuple else tuple(group) for key, group in groups.items()}


#: A provenance tuple; merges may hold any sequence of records here (see ``merge.ProvenanceSet``), which
#: serializes exactly as the tuple of its records.
ProvenanceTuple: TypeAlias = Annotated[
    tuple[Provenance, ...], PlainSerializer(plain_provenance, return_type=tuple[Provenance, ...])
]
#: Provenance per key (attribute, name, summary); serializes as a plain dict of plain tuples.
ProvenanceGroups: TypeAlias = Annotated[
    dict[str, tuple[Provenance, ...]],
    PlainSerializer(plain_groups, return_type=dict[str, tuple[Provenance, ...]]),
]


class ConflictValue(Frozen):
    """One competing attribute value with the sources that back it."""

    value: JSONValue
    provenance: ProvenanceTuple


class AttributeConflict(Frozen):
    """Sources disagree on an attribute: every value is kept with its provenance."""

    key: str
    values: tuple[ConflictValue, ...]


class _Element(Frozen):
    attributes: dict[str, JSONValue] = Field(default_factory=dict)
    #: Which sources back each attribute; a missing key falls back to the element's provenance.
    attribute_provenance: ProvenanceGroups = Field(default_factory=dict)
    conflicts: dict[str, AttributeConflict] = Field(default_factory=dict)
    provenance: ProvenanceTuple = ()


class Node(_Element):
    """An entity. ``name`` is what people call it; ``aliases`` are names absorbed by merges."""

    id: NodeId
    type: str = GENERIC_TYPE
    name: str
    summary: str | None = None
    aliases: tuple[str, ...] = ()
    #: Every name this node was given, with the sources that used it (name and aliases derive from it).
    name_sources: ProvenanceGroups = Field(default_factory=dict)
    #: Every summary this node was given, with the sources that gave it.
    summary_sources: ProvenanceGroups = Field(default_factory=dict)


class Edge(_Element):
    """A typed, directed relation. Its id is derived from (source, type, target)."""

    source: NodeId
    target: NodeId
    type: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> EdgeId:
        return bulk_edge_id(self.source, self.type, self.target)
