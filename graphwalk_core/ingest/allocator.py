"""Free C-heap pages handed back between routing windows, so an ingest's peak memory follows what it holds.

Each window allocates and frees many blocks (a window's extractions, plans and merged elements, numpy
scratch): glibc keeps the freed space of its heap resident for reuse, and what is freed below a live block
cannot shrink the heap. :func:`release_free_heap` (``malloc_trim``) gives those pages back to the system
(measured at 6,119 2Wiki passages: ~25 MB lower peak; docs/results.md). It changes no value computed; on
other C libraries it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has ``malloc_trim``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def release_free_heap() -> bool:
    """Give the heap's free pages back to the system (``malloc_trim(0)``). Whether any were released."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1
