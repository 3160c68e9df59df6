"""Sources: files and SQL databases, profiled and read as documents with stable ids."""

from graphwalk_core.ingest.sources.base import (
    SkippedItem,
    Source,
    SourceDocument,
    SourceProfile,
    TableProfile,
)
from graphwalk_core.ingest.sources.files import FileSource
from graphwalk_core.ingest.sources.mapping import RecordMapping, RelationColumn, load_mappings
from graphwalk_core.ingest.sources.specs import SourceSpec, load_sources, open_source, source_from_arg
from graphwalk_core.ingest.sources.sql import SQLSource

__all__ = [
    "FileSource",
    "RecordMapping",
    "RelationColumn",
    "SQLSource",
    "SkippedItem",
    "Source",
    "SourceDocument",
    "SourceProfile",
    "SourceSpec",
    "TableProfile",
    "load_mappings",
    "load_sources",
    "open_source",
    "source_from_arg",
]
