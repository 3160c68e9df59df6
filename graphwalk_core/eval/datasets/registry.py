"""``load_dataset``: one entry point for every dataset name."""

from __future__ import annotations

from pathlib import Path

from graphwalk_core.errors import InputError, OptionError
from graphwalk_core.eval.datasets import hotpotqa, twowiki
from graphwalk_core.eval.datasets.base import Dataset, default_data_dir, require_file
from graphwalk_core.eval.datasets.custom import load_custom
from graphwalk_core.eval.datasets.metaqa import load_metaqa, metaqa_files

DATASET_NAMES = (
    "metaqa-1hop",
    "metaqa-2hop",
    "metaqa-3hop",
    "hotpotqa",
    "2wiki",
    "2wiki-retrieval",
    "custom",
)

#: Datasets whose files in the data folder hold dev questions only (MetaQA has a file per split): another
#: split needs its own question file (``path``), which the run labels as asked.
DEV_ONLY = ("hotpotqa", "2wiki", "2wiki-retrieval")


def has_test_split(name: str) -> bool:
    """Whether the data folder holds dataset ``name``'s test questions (MetaQA; the others need a file)."""
    return name in DATASET_NAMES and name not in (*DEV_ONLY, "custom")


def data_files(name: str, *, split: str = "dev") -> list[str]:
    """The files ``load_dataset(name, split=split)`` reads by default, relative to the data folder."""
    if name.startswith("metaqa-") and name in DATASET_NAMES:
        files: tuple[Path, ...] = metaqa_files(int(name[len("metaqa-")]), split)
    elif name == "hotpotqa":
        files = (hotpotqa.DEFAULT_FILE,)
    elif name == "2wiki":
        files = (twowiki.DEFAULT_FILE,)
    elif name == "2wiki-retrieval":
        files = (twowiki.CORPUS_FILE, twowiki.RETRIEVAL_FILE)
    elif name == "custom":
        raise InputError("the custom dataset reads the files you name; it has no data folder")
    else:
        raise _unknown(name)
    return [f.as_posix() for f in files]


def load_dataset(
    name: str,
    *,
    split: str = "dev",
    n: int | None = None,
    seed: int = 0,
    data_dir: Path | None = None,
    path: Path | None = None,
    kb: Path | None = None,
    corpus: Path | None = None,
) -> Dataset:
    """Load ``name`` (see ``DATASET_NAMES``), keeping a seeded subset of ``n`` questions.

    ``path`` overrides the question file (hotpotqa, 2wiki, 2wiki-retrieval, custom); ``kb`` the
    triples file (metaqa, custom); ``corpus`` the passage corpus (2wiki-retrieval, custom).
    """
    root = data_dir or default_data_dir()
    if name in DEV_ONLY and split != "dev" and path is None:
        files = ", ".join(data_files(name))
        raise OptionError(
            "{name} has dev questions only in the data folder ({files}): {split}={given} needs a question "
            "file of that split ({path})",
            name=name,
            files=files,
            given=split,
        )
    given = ((path, "question file", "path"), (kb, "KB", "kb"), (corpus, "corpus", "corpus"))
    for file, what, option in given:
        if file is not None and not file.exists():  # one that exists but is no file: the loader says why
            require_file(file, f"{name} {what}", option=option)
    if name.startswith("metaqa-") and name in DATASET_NAMES:
        return load_metaqa(int(name[len("metaqa-")]), split=split, data_dir=root, kb_path=kb, n=n, seed=seed)
    if name == "hotpotqa":
        ds = hotpotqa.load_hotpotqa(path or root / hotpotqa.DEFAULT_FILE, split=split, n=n, seed=seed)
    elif name == "2wiki":
        ds = twowiki.load_twowiki(path or root / twowiki.DEFAULT_FILE, split=split, n=n, seed=seed)
    elif name == "2wiki-retrieval":
        ds = twowiki.load_twowiki_retrieval(
            corpus or root / twowiki.CORPUS_FILE,
            path or root / twowiki.RETRIEVAL_FILE,
            split=split,
            n=n,
            seed=seed,
        )
    elif name == "custom":
        if path is None:
            raise OptionError("the custom dataset needs a question file ({path})")
        ds = load_custom(path, split=split, n=n, seed=seed, kb=kb, corpus=corpus)
    else:
        raise _unknown(name)
    return ds.model_copy(update={"info": {**ds.info, "seed": seed}})


def _unknown(name: str) -> InputError:
    return InputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASET_NAMES)}")
