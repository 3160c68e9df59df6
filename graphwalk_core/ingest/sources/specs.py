"""Source specs (``sources.yaml``): a list of
``{id, kind: files|sql, path_or_url, mapping?, extractor?, routing?}``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from graphwalk_core.errors import InputError
from graphwalk_core.ingest.sources.base import Source, check_source_id
from graphwalk_core.ingest.sources.files import DEFAULT_MAX_BYTES, FileSource
from graphwalk_core.ingest.sources.mapping import load_mappings
from graphwalk_core.ingest.sources.sql import SQLSource
from graphwalk_core.ingest.sources.yamlfile import item_lines, read_yaml


class SourceSpec(BaseModel):
    """One declared source. Relative paths (source, mapping) resolve against ``base_dir``."""

    #: an error names the field and what is wrong, never its value: a database URL written under a wrong
    #: key (``url:``) or as a list was repeated whole, password included
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    id: str
    kind: Literal["files", "sql"]
    path_or_url: str
    mapping: str | dict[str, Any] | None = None
    extractor: Literal["llm", "nlp"] | None = None
    #: ``jev``: the decider routes mentions (default); ``exact``: merge on identical names, no calls
    routing: Literal["jev", "exact"] = "jev"
    max_bytes: int = DEFAULT_MAX_BYTES
    #: a source that lists nothing retracts every document it gave (else an error: an unmounted share?)
    allow_empty: bool = False
    base_dir: str | None = None

    def resolve(self, value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() or self.base_dir is None else Path(self.base_dir) / path


def load_sources(path: str | Path) -> list[SourceSpec]:
    """Parse a sources.yaml file; errors name the file, the entry and its line."""
    path = Path(path)
    raw = read_yaml(path, "sources file")
    if not isinstance(raw, list):
        raise InputError(f"sources file {path}: expected a list of sources, got {type(raw).__name__}")

    def line(index: int) -> str:
        """``path:LINE`` of entry ``index`` (the file is parsed again for its lines only on an error)."""
        return f"{path}:{item_lines(path)[index]}"

    specs: list[SourceSpec] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise InputError(f"sources file {line(index)}: entry #{index} is not an object")
        try:
            spec = SourceSpec.model_validate({**entry, "base_dir": str(path.parent.resolve())})
            check_source_id(spec.id)
        except (ValidationError, InputError) as exc:
            raise InputError(
                f"sources file {line(index)}: entry #{index} ({entry.get('id', '?')}): {exc}"
            ) from exc
        ids = [s.id for s in specs]
        if spec.id in ids:
            first = item_lines(path)[ids.index(spec.id)]
            raise InputError(
                f"sources file {line(index)}: source id {spec.id!r} repeats the entry on line {first}"
            )
        specs.append(spec)
    return specs


def open_source(spec: SourceSpec) -> Source:
    """The Source a spec declares."""
    mapping = spec.mapping
    mappings = load_mappings(spec.resolve(mapping) if isinstance(mapping, str) else mapping)
    if spec.kind == "files":
        return FileSource(
            spec.resolve(spec.path_or_url), source_id=spec.id, mappings=mappings, max_bytes=spec.max_bytes
        )
    url = spec.path_or_url
    if "://" not in url:
        url = f"sqlite:///{spec.resolve(url)}"
    return SQLSource(url, source_id=spec.id, mappings=mappings)


def source_from_arg(arg: str, *, source_id: str | None = None, mapping: str | None = None) -> Source:
    """A source from a CLI argument: a SQLAlchemy URL, a ``.sqlite``/``.db`` file, or a path; ``source_id``
    None takes the id from it (an empty one is an InputError, not that)."""
    if source_id is not None:
        check_source_id(source_id)
    mappings = load_mappings(mapping)
    if "://" in arg:
        return SQLSource(arg, source_id=source_id, mappings=mappings)
    path = Path(arg)
    if path.suffix.lower() in {".sqlite", ".sqlite3", ".db"}:
        return SQLSource(f"sqlite:///{path.resolve()}", source_id=source_id, mappings=mappings)
    return FileSource(path, source_id=source_id, mappings=mappings)
