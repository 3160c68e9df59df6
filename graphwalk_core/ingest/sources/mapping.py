"""Declarative mapping from structured records (CSV/JSON rows) to entities and relations, loadable from YAML.

Example (YAML)::

    type: film
    name: title
    key: film_id                    # optional: the column that identifies a record (see RecordMapping)
    attributes: [year, rating]      # omitted: every column that is not the name or a relation
    relations:
      - {column: director, type: directed_by, target_type: person}
      - {column: stars, type: starred_actors, target_type: person, split: "|"}
"""

from __future__ import annotations

import fnmatch
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.extraction.base import ExtractedEntity, ExtractedRelation, Extraction
from graphwalk_core.ingest.sources.yamlfile import read_yaml
from graphwalk_core.ingest.text import normalize_name, snake_case
from graphwalk_core.model import GENERIC_TYPE, JSONValue, canonical_json, content_hash
from graphwalk_core.stores.keys import MAX_TYPE_BYTES, utf8_size

#: What to do about two columns of one attribute name, when a mapping's ``attributes`` can choose.
LIST_ATTRIBUTES = "rename one, or list the attributes to keep in the mapping"


def nfc(text: str) -> str:
    """``text`` in NFC: ``"Anne\\u0301e"`` (decomposed, as some editors and macOS file names save it) is
    ``"Année"``."""
    return unicodedata.normalize("NFC", text)


def field_of(record: Mapping[str, Any], column: str) -> str | None:
    """The field of ``record`` that is the column ``column``: itself, else the first field with its NFC
    form (a header saved decomposed matches a mapping saved composed, and the other way round); None."""
    if column in record:
        return column
    return _by_nfc(tuple(record)).get(nfc(column))


@lru_cache(maxsize=256)
def _by_nfc(fields: tuple[str, ...]) -> dict[str, str]:
    """NFC form -> the first field of ``fields`` with it (records of one file share their fields, so an
    optional column a record lacks costs a lookup, not a normalization of every field)."""
    index: dict[str, str] = {}
    for field in fields:
        index.setdefault(nfc(field), field)
    return index


def attribute_names(columns: Iterable[str], *, where: str, hint: str = "rename one") -> dict[str, str]:
    """Each column's attribute name (the snake_case of its NFC form); two columns of one name (``Year`` and
    ``year``, or one name in two Unicode forms) are an InputError naming ``where`` and both, since one
    value would overwrite the other without a word."""
    names: dict[str, str] = {}
    first: dict[str, str] = {}
    for column in columns:
        name = names[column] = snake_case(nfc(column))
        other = first.setdefault(name, column)
        if other != column:
            forms = ""
            if nfc(other) == nfc(column):
                forms = f" (one name in two Unicode forms: {other!a} and {column!a})"
            raise InputError(
                f"{where}: columns {other!r} and {column!r}{forms} are both the attribute {name!r} (one "
                f"would overwrite the other); {hint}"
            )
    return names


def type_name(value: str) -> str:
    """A node or edge type as extraction writes one: snake_case (``Film Director`` -> ``film_director``), so
    a mapped record's types are the ones text extraction gives the same entity and relation (``Person``
    beside ``person`` was a type conflict on every such node, ``Knows`` beside ``knows`` a second edge)."""
    kind = snake_case(value)
    if not kind:
        raise ValueError(f"{value!r} has no letter or digit")
    if utf8_size(kind) > MAX_TYPE_BYTES:
        raise ValueError(f"{utf8_size(kind)} bytes in UTF-8, over the {MAX_TYPE_BYTES} a graph store keeps")
    return kind


class RelationColumn(BaseModel):
    """A column whose value names another entity: ``record --type--> value``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str
    type: str
    target_type: str = GENERIC_TYPE
    split: str | None = None

    @field_validator("column")
    @classmethod
    def _nfc(cls, column: str) -> str:
        """In NFC, as a mapping's columns (:meth:`RecordMapping._nfc`)."""
        return nfc(column)

    @field_validator("type", "target_type")
    @classmethod
    def _type(cls, value: str) -> str:
        return type_name(value)


class RecordMapping(BaseModel):
    """How one record becomes an entity: the name column, the type, attribute and relation columns.

    ``key``: a column whose value (text or an integer) identifies the record in a record file: its
    document id is ``<path>#<key>`` instead of ``<path>#<position>``, so inserting, removing or
    reordering records leaves the others as they were (unchanged, not re-processed). SQL rows are
    identified by their primary key (a SQL source lists a key in its mappings as ignored).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    type: str = GENERIC_TYPE
    key: str | None = Field(default=None, description="a column identifying each record of a file")
    description: str | None = Field(default=None, description="a column holding a description")
    attributes: list[str] | None = None
    relations: list[RelationColumn] = Field(default_factory=list)

    @field_validator("name", "key", "description", "attributes")
    @classmethod
    def _nfc(cls, value: str | list[str] | None) -> str | list[str] | None:
        """Column names in NFC: they match a record's fields in any Unicode form (:func:`field_of`)."""
        if isinstance(value, list):
            return [nfc(column) for column in value]
        return nfc(value) if value is not None else None

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        return type_name(value)

    @property
    def extraction_spec(self) -> dict[str, Any]:
        """What decides a record's extraction: every field but ``key`` (which names the document only, so
        adding one re-processes nothing, and mappings without one hash as before keys existed)."""
        return self.model_dump(mode="json", exclude={"key"})

    @property
    def version(self) -> str:
        """``mapping:<hash>``: recorded as the extractor, so editing the mapping reprocesses the records."""
        return "mapping:" + content_hash(self.extraction_spec)[:12]

    def to_extraction(self, record: dict[str, JSONValue], *, where: str) -> Extraction:
        """The entity (and relations) of one record; ``where`` names the record in errors."""

        def value(column: str) -> JSONValue:
            field = field_of(record, column)
            return record.get(field) if field is not None else None

        name = _text(_single(value(self.name), f"{where}: the name column {self.name!r}"))
        if not name:
            raise InputError(f"{where}: the name column {self.name!r} is missing or empty")
        if not normalize_name(name):  # "?" and "-" would be one node, as would every such name
            raise InputError(f"{where}: the name column {self.name!r} holds no letter or digit: {name!r}")
        keys = self.attributes
        if keys is None:
            named = (self.name, self.description, *(r.column for r in self.relations))
            used = {field_of(record, column) for column in named if column is not None}
            keys = [k for k in record if k not in used]
        names = attribute_names(keys, where=where, hint=LIST_ATTRIBUTES)
        attributes = {names[k]: v for k in keys if (v := _literal(value(k))) is not None}
        description = None
        if self.description:
            text = _text(
                _single(value(self.description), f"{where}: the description column {self.description!r}")
            )
            # a blank cell is no description: an empty summary backed by two blank cells outvoted a text's
            description = text or None
        entities = [
            ExtractedEntity(
                name=name,
                type=self.type,
                description=description,
                attributes=attributes,
            )
        ]
        relations: list[ExtractedRelation] = []
        for rel in self.relations:
            cell = value(rel.column)  # a JSON list names a target per item
            targets: list[str] = []
            for item in cell if isinstance(cell, list) else [cell]:
                raw = _text(_single(item, f"{where}: the relation column {rel.column!r}"))
                targets.extend([t.strip() for t in raw.split(rel.split)] if rel.split else [raw])
            # a placeholder ("-", "?") names no entity, as an empty cell names none (text extraction drops
            # such names too)
            for target in dict.fromkeys(t for t in targets if normalize_name(t)):
                if target == name:
                    continue
                entities.append(ExtractedEntity(name=target, type=rel.target_type))
                relations.append(ExtractedRelation(source=name, type=rel.type, target=target))
        return Extraction(entities=entities, relations=relations)


def _single(value: JSONValue, what: str) -> JSONValue:
    """``value`` when it is one value; a JSON object (or a list where one value is read) is an InputError
    saying ``what`` holds it: its Python text (``['Ann', 'Bob']``) named an entity."""
    if isinstance(value, dict | list):
        kind = "an object" if isinstance(value, dict) else "a list"
        raise InputError(f"{what} holds {kind}, not a single value: {canonical_json(value)[:80]}")
    return value


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _literal(value: Any) -> str | int | float | bool | None:
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


#: Mappings keyed by a file glob (relative path, e.g. ``films.csv`` or ``*.csv``) or a SQL table name.
Mappings = dict[str, RecordMapping]


def load_mappings(value: str | Path | dict[str, Any] | None) -> Mappings:
    """Mappings from a YAML file path or a dict (e.g. inline in sources.yaml).

    A single mapping (an object with a ``name`` key) applies to every record file (``*``); otherwise
    the object maps file globs or table names to mappings.
    """
    if value is None:
        return {}
    where = "mapping"
    if isinstance(value, str | Path):
        path = Path(value)
        where = str(path)
        value = read_yaml(path, "mapping file")
    if not isinstance(value, dict):
        raise InputError(f"{where}: a mapping must be a YAML object, got {type(value).__name__}")
    items = {"*": value} if "name" in value else value
    out: Mappings = {}
    for key, spec in items.items():
        try:
            out[str(key)] = RecordMapping.model_validate(spec)
        except ValidationError as exc:
            raise InputError(f"{where}: invalid mapping for {key!r}: {_why(exc)}") from None
    return out


def _why(exc: ValidationError) -> str:
    """Each error as ``field: problem``, then the fields a mapping and a relation take (not pydantic's
    multi-line report with its documentation links)."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        problem = {"extra_forbidden": "unknown field", "missing": "missing"}.get(
            error["type"], error["msg"].removeprefix("Value error, ")
        )
        problems.append(f"{field}: {problem}" if field else problem)
    return (
        f"{'; '.join(problems)} (a mapping takes {', '.join(RecordMapping.model_fields)}; a relation "
        f"takes {', '.join(RelationColumn.model_fields)}; docs/mappings.md)"
    )


def unmatched_keys(mappings: Mappings, names: list[str]) -> list[str]:
    """The mapping keys (in mapping order) that match none of ``names`` exactly or as a glob."""
    return [key for key in mappings if not any(n == key or fnmatch.fnmatchcase(n, key) for n in names)]


def mapping_key(mappings: Mappings, key: str) -> str | None:
    """The mapping key (a glob) that ``key`` matches exactly first, else the first glob that matches."""
    if key in mappings:
        return key
    return next((pattern for pattern in mappings if fnmatch.fnmatchcase(key, pattern)), None)


def mapping_for(mappings: Mappings, key: str) -> RecordMapping | None:
    """The mapping of :func:`mapping_key`."""
    pattern = mapping_key(mappings, key)
    return mappings[pattern] if pattern is not None else None


def absent_columns(mapping: RecordMapping, fields: Mapping[str, Any], file: str) -> str | None:
    """Which columns ``mapping`` reads beside its name (description, listed attributes, relations) are
    none of ``fields`` (every field of ``file``'s records), each with its role; None when it has them all.
    A misspelled or renamed column made no summary, attribute or edge, without a word."""
    roles = [
        *([(mapping.description, "the description")] if mapping.description else []),
        *((column, "an attribute") for column in mapping.attributes or ()),
        *((rel.column, f"the relation {rel.type!r}") for rel in mapping.relations),
    ]
    absent = [f"{column!r} ({role})" for column, role in roles if field_of(fields, column) is None]
    if not absent:
        return None
    one = len(absent) == 1
    return (
        f"column{'' if one else 's'} {', '.join(absent)} {'is' if one else 'are'} in no record of {file}, so "
        f"{'it gives' if one else 'they give'} nothing (misspelled, or renamed in the file?)"
    )
