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


#: Frees a mapped 4 MiB block (glibc then serves blocks up to 4 MiB from its heap), then holds a 2 MiB one:
#: whether it got pages of its own (mapped bytes while it is held), with and without ``map_large_blocks``.
MAPPED = """
import ctypes, json, sys
from graphwalk_core.ingest import allocator
FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in FIELDS.split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
chosen = allocator.map_large_blocks() if sys.argv[1] == "map" else None
block = bytearray(4 << 20)
del block
held = bytearray(2 << 20)
print(json.dumps({"chosen": chosen, "mapped": libc.mallinfo2().hblkhd >= 2 << 20}))
"""


@glibc
def test_large_blocks_get_pages_of_their_own_once_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert run(MAPPED, "default") == {"chosen": None, "mapped": False}  # glibc's adaptive threshold
    assert run(MAPPED, "map") == {"chosen": True, "mapped": True}


@glibc
def test_a_threshold_the_user_set_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", str(8 << 20))
    assert run(MAPPED, "map") == {"chosen": False, "mapped": False}


@glibc
def test_a_threshold_the_user_set_as_a_glibc_tunable_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv(
        "GLIBC_TUNABLES", f"glibc.malloc.trim_threshold=0:glibc.malloc.mmap_threshold={8 << 20}"
    )
    assert run(MAPPED, "map") == {"chosen": False, "mapped": False}
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")  # another tunable: not a choice
    assert run(MAPPED, "map") == {"chosen": True, "mapped": True}
