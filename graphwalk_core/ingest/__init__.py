"""Ingestion: sources -> chunks -> extraction -> routing -> merge with provenance -> hash ledger.

The stages (:mod:`graphwalk_core.ingest.stages`) are plain functions with JSON-serializable pydantic
outputs; :func:`graphwalk_core.ingest.pipeline.ingest` composes them (``graphwalk ingest`` uses it).
See ``README.md`` in this folder for the design decisions.
"""

from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.report import IngestReport

__all__ = ["IngestReport", "ingest"]
