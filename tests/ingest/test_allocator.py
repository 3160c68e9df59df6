"""A long ingest gives the C heap's free pages back after every window."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.ingest import allocator, pipeline
from graphwalk_core.ingest.sources import FileSource
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import ScriptedExtractor

glibc = pytest.mark.skipif(allocator._glibc() is None, reason="glibc only (malloc_trim)")

#: Holds 150 MiB in 2 KiB blocks, frees all but the last, then trims: RSS in MiB at each step.
TRIMMED = """
import json, resource
from graphwalk_core.ingest import allocator
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize() >> 20
blocks = [bytearray(2048) for _ in range(75_000)]
last = blocks.pop()
held = rss()
del blocks  # free, but below the last block: not at the heap's top, so still resident
freed = rss()
released = allocator.release_free_heap()
print(json.dumps({"held": held, "freed": freed, "trimmed": rss(), "released": released}))
"""


def run(code: str, *args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@glibc
def test_releasing_the_free_heap_gives_its_pages_back() -> None:
    seen = run(TRIMMED)
    assert seen["released"] is True
    assert seen["freed"] - seen["held"] > -20  # freeing alone kept the pages
    assert seen["freed"] - seen["trimmed"] > 100  # trimming gave them back


async def test_an_ingest_releases_the_free_heap_after_every_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(pipeline, "release_free_heap", lambda: calls.append("release"))
    for n in range(5):
        (tmp_path / f"d{n}.txt").write_text(f"E Name {n}|person", encoding="utf-8")
    await pipeline.ingest(
        FileSource(tmp_path),
        MemoryGraphStore(),
        extractor=ScriptedExtractor(),
        embedder=HashingEmbedder(),
        routing="exact",
        window=2,
    )
    assert calls == ["release", "release", "release"]
