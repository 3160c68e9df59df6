"""Free C-heap pages handed back between routing windows, so an ingest's peak memory follows what it holds.

Each window allocates and frees many blocks (a window's extractions, plans and merged elements, numpy
scratch): glibc keeps the freed space of its heap resident for reuse, and what is freed below a live block
cannot shrink the heap. :func:`release_free_heap` (``malloc_trim``) gives those pages back to the system
(measured at 6,119 2Wiki passages: ~25 MB lower peak; docs/results.md). :func:`map_large_blocks` keeps
large blocks out of the heap altogether (another ~25 MB). Neither changes a value computed; on other C
libraries they do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys

#: ``mallopt``'s parameter number for glibc's ``M_MMAP_THRESHOLD``.
_M_MMAP_THRESHOLD = -3
#: Blocks of this many bytes or more get pages of their own (glibc's starting threshold, kept fixed).
LARGE_BLOCK = 128 * 1024


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has ``malloc_trim``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


def release_free_heap() -> bool:
    """Give the heap's free pages back to the system (``malloc_trim(0)``). Whether any were released."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1


def map_large_blocks() -> bool:
    """From now on in this process, give every block of :data:`LARGE_BLOCK` bytes or more pages of its own,
    returned to the system when it is freed. glibc otherwise raises that threshold to the largest block
    freed so far (up to 32 MiB), and a window's numpy scratch is then carved from the heap, where it stays
    resident. Left as it is when the user chose one (``MALLOC_MMAP_THRESHOLD_``, or
    ``glibc.malloc.mmap_threshold`` in ``GLIBC_TUNABLES``). Whether it was set."""
    libc = _glibc()
    if libc is None or _user_threshold():
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK) == 1)


def _user_threshold() -> bool:
    """Whether the environment sets glibc's mmap threshold (either way glibc reads it at start-up)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "").split(":")
    return "MALLOC_MMAP_THRESHOLD_" in os.environ or any(
        t.partition("=")[0] == "glibc.malloc.mmap_threshold" for t in tunables
    )
