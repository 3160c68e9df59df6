"""Any Hugging Face hub dataset as an eval dataset, through ``datasets.load_dataset`` pinned to a commit.

``load_hub_dataset("owner/name", revision=<40-hex sha>, columns=ColumnMap(...))`` loads one split with
HF ``datasets`` (Arrow-backed and memory-mapped; ``streaming=True`` reads rows over HTTP as they come,
for splits too large to download first) and maps its columns to questions, gold answers, per-question
passages (pooled into one corpus, as HotpotQA's are) and supporting passage titles.

Column shapes understood (HotpotQA's, 2Wiki's and SQuAD-like layouts on the hub use them):

* answers: a string, a list of strings, or a struct with a ``text`` list (SQuAD);
* passages: a list of ``{title, text}`` structs, or a struct of parallel lists (``{"title": [...],
  "sentences": [[...], ...]}``); a text given as a list of sentences is joined (as written when they
  carry their own spaces, as HotpotQA's do, else with one space, as 2Wiki's need);
* supporting: a list of titles, or a struct whose ``title`` list names them (HotpotQA's
  ``supporting_facts``); every supporting title must be one of the row's passages.

The endpoint is the hub's (``HF_ENDPOINT``), or ``endpoint``. Offline (``HF_HUB_OFFLINE``), a split
already in the datasets cache loads; otherwise the error says what was tried and what else to do: the
data folder does not hold hub datasets, so its way to local files is a custom dataset (``LOCAL_COPY_HINT``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question, subset_ids
from graphwalk_core.eval.datasets.hub import HubRef, check_revision
from graphwalk_core.eval.datasets.passages import PassagePool

#: What to do without the hub: the split's rows as local files, evaluated as a custom dataset.
LOCAL_COPY_HINT = (
    "copy the split to a local question file (and passages file) and evaluate it as a custom dataset "
    "(docs/eval-data.md)"
)


class ColumnMap(BaseModel):
    """Which column holds what (``None``: the dataset has no such column)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = "question"
    answers: str | None = "answer"
    id: str | None = "id"
    passages: str = "context"
    supporting: str | None = "supporting_facts"
    #: keys inside a passage (or the passages struct): its title and its text (or sentence list)
    title: str = "title"
    text: str = "sentences"

    @classmethod
    def parse(cls, pairs: list[str]) -> ColumnMap:
        """From ``field=column`` strings (``answers=`` with nothing after it: no such column)."""
        fields: dict[str, str | None] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or key.strip() not in cls.model_fields:
                raise InputError(
                    f"column mapping {pair!r}: expected FIELD=COLUMN with FIELD one of "
                    f"{', '.join(cls.model_fields)}"
                )
            fields[key.strip()] = value.strip() or None
        try:
            return cls(**fields)  # type: ignore[arg-type]
        except ValueError as exc:
            raise InputError(f"invalid column mapping {pairs}: {exc}") from exc

    def used(self) -> list[str]:
        """The dataset columns read."""
        return [c for c in (self.id, self.question, self.answers, self.passages, self.supporting) if c]


class HubDatasetSpec(BaseModel):
    """One hub split to evaluate on: ``repo`` is ``REPO@SHA``; what ``graphwalk eval hf`` and the Dagster
    ``hf`` dataset partition take."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str
    split: str = "validation"
    config_name: str | None = None
    columns: ColumnMap = ColumnMap()
    streaming: bool = False

    @classmethod
    def from_options(
        cls,
        repo: str,
        *,
        split: str = "validation",
        config_name: str | None = None,
        columns: list[str] | Mapping[str, str] | None = None,
        streaming: bool = False,
    ) -> HubDatasetSpec:
        """From CLI/run-config values: ``columns`` as ``FIELD=COLUMN`` strings or a ``{FIELD: COLUMN}``
        mapping (an empty COLUMN: the dataset has no such column)."""
        pairs = [f"{k}={v}" for k, v in columns.items()] if isinstance(columns, Mapping) else columns
        ref = HubRef.parse(repo, option="repo")
        return cls(
            repo=str(ref),
            split=split,
            config_name=config_name,
            columns=ColumnMap.parse(pairs or []),
            streaming=streaming,
        )

    def load(self, *, n: int | None = None, seed: int = 0, endpoint: str | None = None) -> Dataset:
        ref = HubRef.parse(self.repo, option="repo")
        return load_hub_dataset(
            ref.repo_id,
            revision=ref.revision,
            split=self.split,
            columns=self.columns,
            config_name=self.config_name,
            streaming=self.streaming,
            n=n,
            seed=seed,
            endpoint=endpoint,
        )


def load_hub_dataset(
    repo_id: str,
    *,
    revision: str,
    split: str = "validation",
    columns: ColumnMap | None = None,
    config_name: str | None = None,
    streaming: bool = False,
    n: int | None = None,
    seed: int = 0,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
) -> Dataset:
    """One split of hub dataset ``repo_id`` at commit ``revision`` as an eval :class:`Dataset`.

    ``n`` keeps a seeded subset (the ``subset_ids`` rule of every other dataset; only the id column is
    read to choose it); streamed, it keeps the first ``n`` rows instead (a stream cannot be sampled
    without reading it all).
    """
    cols = columns or ColumnMap()
    ref = HubRef(repo_id, check_revision(revision))
    where = f"dataset repo {ref} (split {split!r}) at {endpoint or _default_endpoint()}"
    with _hub_errors(where), _endpoint(endpoint):
        import datasets

        loaded = datasets.load_dataset(
            repo_id,
            config_name,
            revision=revision,
            split=split,
            streaming=streaming,
            cache_dir=str(cache_dir) if cache_dir else None,
        )
        missing = [c for c in cols.used() if c not in (loaded.column_names or [])]
        if missing:
            raise InputError(
                f"{where} has no column {', '.join(missing)} "
                f"(it has {', '.join(loaded.column_names or [])}); "
                "map the fields to its columns"
            )
        loaded = loaded.select_columns(cols.used())
        if streaming:
            rows: Iterator[dict[str, Any]] = iter(loaded.take(n) if n is not None else loaded)
            ids = None
        else:
            ids = _row_ids(loaded[cols.id] if cols.id else range(len(loaded)), ref, split)
            chosen = range(len(ids)) if n is None else _positions(ids, n, seed)
            rows = iter(loaded.select(chosen))
            ids = [ids[i] for i in chosen]
        pool = PassagePool()
        questions = [
            _question(row, i, cols, pool, ref, split, ids, f"{where}, row {i}") for i, row in enumerate(rows)
        ]
    return Dataset(
        name=f"hf:{repo_id}",
        split=split,
        questions=questions,
        knowledge=Knowledge(graph="passages", passages=tuple(pool.passages), source=repo_id),
        match="token",
        info={
            "hub": str(ref),
            "split": split,
            "config": config_name,
            "columns": cols.model_dump(),
            "streaming": streaming,
            "passages": len(pool.passages),
            "seed": seed,
        },
    )


def _row_ids(values: Any, ref: HubRef, split: str) -> list[str]:
    ids = [str(v) for v in values] if not isinstance(values, range) else [f"{split}-{i}" for i in values]
    if len(set(ids)) != len(ids):
        raise InputError(f"dataset repo {ref}: the id column has duplicate values; map another one")
    return ids


def _positions(ids: list[str], n: int, seed: int) -> list[int]:
    at = {v: i for i, v in enumerate(ids)}
    return [at[v] for v in subset_ids(ids, n, seed)]


def _question(
    row: Mapping[str, Any],
    index: int,
    cols: ColumnMap,
    pool: PassagePool,
    ref: HubRef,
    split: str,
    ids: list[str] | None,
    where: str,
) -> Question:
    text = row[cols.question]
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: column {cols.question!r} is not a question text")
    by_title: dict[str, str] = {}
    for title, body in _passages(row[cols.passages], cols, where):
        by_title.setdefault(title.strip(), pool.add(title, body))
    supporting = []
    for title in _supporting(row[cols.supporting], cols, where) if cols.supporting else []:
        if title.strip() not in by_title:
            raise InputError(f"{where}: supporting title {title!r} is not one of the row's passages")
        supporting.append(by_title[title.strip()])
    qid = ids[index] if ids is not None else (str(row[cols.id]) if cols.id else f"{split}-{index}")
    extra: dict[str, Any] = {"supporting": list(dict.fromkeys(supporting)), "hub": str(ref)}
    gold: list[str] = []
    if cols.answers:
        gold = _answers(row[cols.answers], where)
        if isinstance(row[cols.answers], Mapping):
            extra["aliases"] = True  # SQuAD's texts: alternative references for one answer
    return Question(id=qid, text=text.strip(), gold=gold, extra=extra)


def _answers(value: Any, where: str) -> list[str]:
    """The gold texts: an answer set (a string or a list), or a SQuAD struct's alternative references."""
    if isinstance(value, Mapping):
        value = value.get("text")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{where}: answers must be a string, a list of strings or a struct with 'text'")


def _body(value: Any) -> str:
    """A passage text, or its sentence list joined: as written when the sentences carry their own spaces
    (HotpotQA's do), else with one space between them (2Wiki's do not: "II.His" would be one word)."""
    if not isinstance(value, list):
        return str(value).strip()
    sentences = [str(s) for s in value]
    spaced = any(s[:1].isspace() for s in sentences[1:]) or any(s[-1:].isspace() for s in sentences[:-1])
    return ("" if spaced else " ").join(sentences).strip()


def _passages(value: Any, cols: ColumnMap, where: str) -> list[tuple[str, str]]:
    """(title, text) pairs from a list of structs or a struct of parallel lists."""
    try:
        if isinstance(value, Mapping):
            titles, bodies = value[cols.title], value[cols.text]
            if len(titles) != len(bodies):
                raise InputError(f"{where}: passages have {len(titles)} titles but {len(bodies)} texts")
            return [(str(t), _body(b)) for t, b in zip(titles, bodies, strict=True)]
        if isinstance(value, list):
            return [(str(p[cols.title]), _body(p[cols.text])) for p in value]
    except (KeyError, TypeError) as exc:
        raise InputError(
            f"{where}: passages need {cols.title!r} and {cols.text!r} keys (missing {exc})"
        ) from exc
    raise InputError(f"{where}: passages must be a list of structs or a struct of lists")


def _supporting(value: Any, cols: ColumnMap, where: str) -> list[str]:
    if isinstance(value, Mapping):
        value = value.get(cols.title)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise InputError(f"{where}: supporting titles must be a list of strings or a struct with {cols.title!r}")


def _default_endpoint() -> str:
    import datasets.config

    return datasets.config.HF_ENDPOINT


@contextmanager
def _endpoint(endpoint: str | None) -> Iterator[None]:
    """Point ``datasets`` at ``endpoint`` for the call: it reads ``HF_ENDPOINT`` once, at import, into
    ``datasets.config`` and passes that endpoint to every hub client it makes."""
    if endpoint is None:
        yield
        return
    import datasets.config

    saved = datasets.config.HF_ENDPOINT, datasets.config.HUB_DATASETS_URL
    datasets.config.HF_ENDPOINT = endpoint.rstrip("/")
    datasets.config.HUB_DATASETS_URL = (
        datasets.config.HF_ENDPOINT + "/datasets/{repo_id}/resolve/{revision}/{path}"
    )
    try:
        yield
    finally:
        datasets.config.HF_ENDPOINT, datasets.config.HUB_DATASETS_URL = saved


@contextmanager
def _hub_errors(where: str) -> Iterator[None]:
    """Our InputError/ConfigError for whatever ``datasets`` raised while loading."""
    try:
        yield
    except (InputError, ConfigError):
        raise
    except ImportError as exc:
        raise ConfigError("HF datasets is not installed: pip install 'graphwalk[eval]'") from exc
    except Exception as exc:
        import datasets.config
        from datasets.exceptions import DatasetNotFoundError

        if isinstance(exc, DatasetNotFoundError) and not datasets.config.HF_HUB_OFFLINE:
            raise InputError(f"cannot load {where}: {exc} (check the repo id and the sha)") from exc
        if datasets.config.HF_HUB_OFFLINE:
            raise ConfigError(
                f"cannot load {where}: offline mode is on (HF_HUB_OFFLINE) and the split is not in the "
                f"datasets cache; unset HF_HUB_OFFLINE to download it, or {LOCAL_COPY_HINT}"
            ) from exc
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0]}" if str(exc) else type(exc).__name__
        raise ConfigError(f"cannot load {where}: {detail}; {LOCAL_COPY_HINT}") from exc
