"""Which graph a model learned over: its manifest's ``graph``, compared with the graph a walk reads."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from graphwalk_core.decisions.trained import MANIFEST, TrainedDecisionBackend, read_manifest
from graphwalk_core.stores.open import TRIPLES_SUFFIXES

if TYPE_CHECKING:  # the eval package loads only where a graph is hashed (~0.7 s of imports a query saves)
    from graphwalk_core.eval.datasets.base import Dataset, Knowledge

#: The manifest key: the content fingerprint of the graph the model's weak labels were read over.
GRAPH = "graph"


def graph_identity(knowledge: Knowledge) -> str:
    """The knowledge's content fingerprint without its source label, so one triples file read by two
    datasets (MetaQA's kb.txt as ``eval custom --kb``) is one graph."""
    return knowledge.model_copy(update={"source": ""}).fingerprint()


def spec_identity(spec: str | None) -> str | None:
    """:func:`graph_identity` of a graph named on the command line when it is a triples file; None for
    another graph (a database, a Parquet folder, a URL: not known)."""
    path = Path(spec) if spec is not None and "://" not in spec else None
    if path is None or not path.is_file() or path.suffix.lower() not in TRIPLES_SUFFIXES:
        return None
    from graphwalk_core.eval.datasets.base import Knowledge

    return graph_identity(Knowledge(graph="triples", kb_path=path))


def trained_graph(folder: Path) -> str | None:
    """The graph the model in ``folder`` learned over (None: not recorded, or no model there)."""
    path = folder / MANIFEST
    return read_manifest(path).get(GRAPH) if path.is_file() else None


def other_graph_note(model: str, trained: str | None, walked: Iterable[tuple[str, str | None]]) -> str | None:
    """A warning when ``model`` (a name or folder) learned over the graph ``trained`` and walks another
    one of ``walked`` (name, graph; None: not known); none when either graph is not known."""
    other = [name for name, graph in walked if graph is not None and graph != trained]
    if trained is None or not other:
        return None
    return (
        f"the trained decider {model} learned over another graph than {', '.join(other)}'s: it knows "
        "that graph's relations and question phrasings, not these (train one on this graph: "
        "graphwalk train decider --graph ... --questions ...)"
    )


def datasets_note(folder: Path | None, datasets: Iterable[Dataset]) -> str | None:
    """:func:`other_graph_note` for the model in ``folder`` and the graphs of ``datasets``."""
    trained = trained_graph(folder) if folder is not None else None
    if trained is None:  # no model, or one that does not say: nothing to hash the datasets' graphs for
        return None
    walked = [(f"{ds.name}-{ds.split}", graph_identity(ds.knowledge)) for ds in datasets]
    return other_graph_note(str(folder), trained, walked)


def walk_note(decider: object, spec: str) -> str | None:
    """:func:`other_graph_note` for ``decider``, when it is a trained one, walking the graph ``spec``."""
    if not isinstance(decider, TrainedDecisionBackend):
        return None
    model = decider.model
    return other_graph_note(model.name, model.manifest.get(GRAPH), [(spec, spec_identity(spec))])
