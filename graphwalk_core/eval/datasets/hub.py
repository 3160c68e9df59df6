"""Evaluation data from a Hugging Face dataset repo pinned to a commit (``--hub REPO@SHA``).

The repo holds the layout of ``../shared/data`` (``metaqa/kb.txt``,
``metaqa/1-hop/vanilla/qa_dev.txt``, ``metaqa/1-hop/qa_dev_qtype.txt``, ``hotpotqa/...``,
``2wiki/...``). ``fetch_data_dir`` downloads the files a run needs into the hub cache and returns the
snapshot folder, which the loaders read exactly like ``--data-dir``. Only full 40-hex commit shas are
accepted: a branch or tag can move, and a benchmark must be re-runnable on the same data.

Offline: ``huggingface_hub`` reads ``HF_HUB_OFFLINE`` once, at import, into
``huggingface_hub.constants``, and then refuses every request. We still call ``snapshot_download``
then, since a snapshot pinned to a commit and already in the cache loads without any request; when it
is not cached the refusal becomes a ConfigError saying what was tried and how to use local files.
(Tests switch offline mode by patching that constant, as the library only looks there.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from graphwalk_core.errors import ConfigError, InputError, MissingFilesError, OptionConfigError, OptionError

COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
_REPO_ID = re.compile(r"[\w.-]+(/[\w.-]+)?")
#: The end of an OptionConfigError template (option ``data_dir``) when the hub cannot be reached.
LOCAL_FILES_HINT = "use local files instead: {data_dir} or GRAPHWALK_DATA_DIR (default ../shared/data)"


@dataclass(frozen=True)
class HubRef:
    """A dataset repo at one commit: ``owner/name@<40-hex sha>``."""

    repo_id: str
    revision: str

    @classmethod
    def parse(cls, text: str, option: str = "hub") -> HubRef:
        """``text`` as REPO@SHA; an OptionError names the ``option`` (key) that gave it."""
        repo_id, sep, revision = text.strip().rpartition("@")
        if not sep or not _REPO_ID.fullmatch(repo_id):
            raise OptionError(
                f"{{{option}}} expects REPO@SHA (e.g. owner/name@<40-hex commit sha>), got {{text!r}}",
                text=text,
            )
        return cls(repo_id, check_revision(revision))

    def __str__(self) -> str:
        return f"{self.repo_id}@{self.revision}"


def check_revision(revision: str) -> str:
    """``revision`` if it is a full commit sha; branch and tag names are refused (they move)."""
    if not COMMIT_SHA.fullmatch(revision):
        raise InputError(
            f"hub revision {revision!r} is not a full 40-hex commit sha: pin the exact commit "
            "(branches and tags such as 'main' can move, so results would not be reproducible)"
        )
    return revision


def fetch_snapshot(
    ref: HubRef,
    *,
    allow_patterns: list[str] | None = None,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
) -> Path:
    """The local folder of ``ref``'s files matching ``allow_patterns`` (all when None), downloaded once.

    ``endpoint`` defaults to the hub's (``HF_ENDPOINT``), ``cache_dir`` to its cache (``HF_HUB_CACHE``).
    """
    import httpx
    from huggingface_hub import constants, snapshot_download

    check_revision(ref.revision)
    where = f"dataset repo {ref} at {endpoint or constants.ENDPOINT}"
    try:
        folder = snapshot_download(
            ref.repo_id,
            repo_type="dataset",
            revision=ref.revision,
            endpoint=endpoint,
            allow_patterns=allow_patterns,
            cache_dir=cache_dir,
        )
    # the hub's errors (HTTP, offline, cache) are OSErrors; httpx's transport errors are not
    except (OSError, httpx.HTTPError) as exc:
        raise _fetch_error(where, exc) from exc
    return Path(folder)


def fetch_data_dir(
    ref: HubRef, files: list[str], *, endpoint: str | None = None, cache_dir: Path | None = None
) -> Path:
    """A data folder holding ``files`` (paths relative to it) from ``ref``; every one must be there."""
    root = fetch_snapshot(ref, allow_patterns=files, endpoint=endpoint, cache_dir=cache_dir)
    missing = [f for f in files if not (root / f).is_file()]
    if missing:
        raise MissingFilesError(
            f"dataset repo {ref} has no {', '.join(missing)} "
            "(it must hold the ../shared/data layout, e.g. metaqa/1-hop/vanilla/qa_dev.txt)",
            missing,
        )
    return root


def _fetch_error(where: str, exc: BaseException) -> InputError | ConfigError:
    """Our error for a failed download, from the first telling exception in ``exc``'s chain."""
    from huggingface_hub.errors import OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError

    chain = [exc]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None and cause not in chain:
        chain.append(cause)
    if any(isinstance(e, OfflineModeIsEnabled) for e in chain):
        return OptionConfigError(
            "cannot fetch {where}: offline mode is on (HF_HUB_OFFLINE) and the snapshot is not in the "
            f"hub cache; unset HF_HUB_OFFLINE to download it, or {LOCAL_FILES_HINT}",
            where=where,
        )
    for e in chain:
        if isinstance(e, RepositoryNotFoundError | RevisionNotFoundError):
            return InputError(f"cannot fetch {where}: {type(e).__name__} (check the repo id and the sha)")
    root = chain[-1]
    detail = f"{type(root).__name__}: {str(root).splitlines()[0]}" if str(root) else type(root).__name__
    return OptionConfigError(
        f"cannot fetch {{where}}: {{detail}}; {LOCAL_FILES_HINT}", where=where, detail=detail
    )


def resolve_data_dir(
    data_dir: Path | None,
    hub: str | None,
    hub_endpoint: str | None,
    datasets: list[str],
    split: str = "dev",
) -> Path | None:
    """``data_dir``, or the snapshot of ``hub`` (``REPO@SHA``) holding the files ``datasets`` read.

    ``None`` when neither is given (the loaders then use ``GRAPHWALK_DATA_DIR`` or ``../shared/data``).
    """
    if hub is None:
        if hub_endpoint is not None:
            raise OptionError("{hub_endpoint} needs {hub} (REPO@SHA)")
        return data_dir
    if data_dir is not None:
        raise OptionError("{data_dir} and {hub} are mutually exclusive: read local files or a hub repo")
    from graphwalk_core.eval.datasets.registry import data_files

    files = dict.fromkeys(f for name in datasets for f in data_files(name, split=split))
    return fetch_data_dir(HubRef.parse(hub), list(files), endpoint=hub_endpoint)
