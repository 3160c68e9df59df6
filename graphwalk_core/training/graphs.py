"""Which graph a model learned over: its manifest's ``graph``, compared with the graph a walk reads.

A model records :func:`store_identity`, a hash of the graph's named edges, the same whatever stores them
(a triples file, SQLite, Parquet, a database). One saved before records :func:`graph_identity`, its
triples file's bytes (or nothing for another graph), compared with a triples file's only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from graphwalk_core.decisions.trained import MANIFEST, TrainedDecisionBackend, read_manifest
from graphwalk_core.stores.base import GraphStore, named_triples
from graphwalk_core.stores.open import TRIPLES_SUFFIXES

if TYPE_CHECKING:  # the eval package loads only where a graph is hashed (~0.7 s of imports a query saves)
    from graphwalk_core.eval.datasets.base import Dataset, Knowledge

#: The manifest key: the identity of the graph the model's weak labels were read over.
GRAPH = "graph"
#: What starts a :func:`triples_identity` (an identity without it is a triples file's bytes').
NAMED_EDGES = "named-edges:"


def graph_identity(knowledge: Knowledge) -> str:
    """The knowledge's content fingerprint without its source label, so one triples file read by two
    datasets (MetaQA's kb.txt as ``eval custom --kb``) is one graph (what models saved before
    :func:`store_identity` record)."""
    return knowledge.model_copy(update={"source": ""}).fingerprint()


def triples_identity(triples: Iterable[tuple[str, str, str]]) -> str:
    """The identity of the graph of these (source name, relation, target name) edges: how many distinct
    ones there are and a sha256 over them, sorted (a repeated line or another order is the same graph)."""
    distinct = sorted(set(triples))
    digest = hashlib.sha256()
    for triple in distinct:
        digest.update("\0".join(triple).encode() + b"\0")  # no stored name or relation holds a NUL
    return f"{NAMED_EDGES}{len(distinct)}:{digest.hexdigest()}"


def identity_edges(identity: str) -> int | None:
    """The edge count a :func:`triples_identity` records (None: another kind of identity)."""
    count = identity.removeprefix(NAMED_EDGES).partition(":")[0] if identity.startswith(NAMED_EDGES) else ""
    return int(count) if count.isdigit() else None


async def store_identity(store: GraphStore) -> str:
    """:func:`triples_identity` of ``store``'s edges by node name, as a triples export of it reads."""
    return triples_identity(await named_triples(store))


def knowledge_identity(knowledge: Knowledge) -> str | None:
    """:func:`triples_identity` of a triples knowledge's graph (node ids are the names); None for passages
    (no graph before ingestion)."""
    if knowledge.graph != "triples":
        return None
    from graphwalk_core.stores.triples import read_triples

    path = knowledge.kb_path
    return triples_identity(read_triples(path) if path is not None else knowledge.triples)


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
    legacy = not trained.startswith(NAMED_EDGES)
    named: dict[str, str | None] = {}  # by content: datasets over one file read it once

    def identity(knowledge: Knowledge) -> str | None:
        key = graph_identity(knowledge)
        if not legacy and key not in named:
            named[key] = knowledge_identity(knowledge)
        return key if legacy else named[key]

    walked = [(f"{ds.name}-{ds.split}", identity(ds.knowledge)) for ds in datasets]
    return other_graph_note(str(folder), trained, walked)


async def walk_note(decider: object, spec: str, store: GraphStore) -> str | None:
    """:func:`other_graph_note` for ``decider``, when it is a trained one, walking ``store`` (the graph
    ``spec`` names)."""
    if not isinstance(decider, TrainedDecisionBackend):
        return None
    model = decider.model
    trained = model.manifest.get(GRAPH)
    if trained is None:
        return None
    return other_graph_note(model.name, trained, [(spec, await walked_identity(trained, spec, store))])


async def walked_identity(trained: str, spec: str, store: GraphStore) -> str | None:
    """The identity of the graph a query walks, to compare with ``trained``'s. Hashing every edge would
    cost a query time in proportion to the graph, so a graph with as many edges as the model's is taken
    for its graph; only one of another size is hashed (an ingested graph whose nodes share names can
    have more edges than named edges)."""
    if not trained.startswith(NAMED_EDGES):
        return spec_identity(spec)  # a model saved before: a triples file's bytes
    _, edges = await store.counts()
    return trained if edges == identity_edges(trained) else await store_identity(store)
