"""Routing embeds each window's unseen mention names in one batch; the window size changes no decision."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphwalk_core.decisions.local import LocalDecisionBackend
from graphwalk_core.ingest import routing
from graphwalk_core.ingest.pipeline import ingest
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import RecordingEmbedder, ScriptedExtractor

NAMES_RE = re.compile(r"^E ([^|]+)\|", re.MULTILINE)
DOCS = {
    "a.txt": "E Christopher Nolan|person\nE Warner Bros. Pictures|organization\nE 1999|year",
    "b.txt": "E Nolan|person\nE Kyoto|city",
    "c.txt": "E Chris Nolan|person\nE Kyoto Prefecture|region",
    "d.txt": "E Warner Bros|organization\nE Emma Thomas|person",
}


async def route(folder: Path, window: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, RecordingEmbedder]:
    monkeypatch.setattr(routing, "PREFETCH_CHUNKS", window)
    store, embedder = MemoryGraphStore(), RecordingEmbedder()
    report = await ingest(
        FileSource(folder),
        store,
        extractor=ScriptedExtractor(),
        decider=LocalDecisionBackend(embedder),
        embedder=embedder,
        routing="jev",
    )
    nodes = sorted([(n.id, n.name, n.aliases) async for n in store.iter_nodes()])
    return [nodes, report.routing_cost.calls], embedder


async def test_window_size_changes_no_decision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    one_by_one, small = await route(tmp_path, 1, monkeypatch)
    all_at_once, large = await route(tmp_path, 256, monkeypatch)
    assert one_by_one == all_at_once
    # the hashing embedder's decider: "Nolan" and "Warner Bros" merge, "Chris Nolan" stays apart
    assert sorted((n, a) for _, n, a in one_by_one[0]) == [
        ("1999", ()),
        ("Chris Nolan", ()),
        ("Christopher Nolan", ("Nolan",)),
        ("Emma Thomas", ()),
        ("Kyoto Prefecture", ("Kyoto",)),
        ("Warner Bros. Pictures", ("Warner Bros",)),
    ]
    assert one_by_one[1] == 3
    # window 1: each document's unseen names are embedded in one call before it is routed; the local
    # decider reads its question's names (mention, candidates) from the index's pool, so only the text of
    # the NEW option is new to it (once)
    assert small.calls == [
        ["Christopher Nolan", "Warner Bros. Pictures"],
        ["Nolan", "Kyoto"],
        ["a new entity, none of the above"],
        ["Chris Nolan", "Kyoto Prefecture"],
        ["Warner Bros", "Emma Thomas"],
    ]
    # one window: every unseen name in one call, first
    assert large.calls[0] == [n for doc in DOCS.values() for n in NAMES_RE.findall(doc) if n != "1999"]
    assert large.calls[1:] == [["a new entity, none of the above"]]
