"""One BLAS thread for the small matrix products graphwalk runs in its hot loops.

Routing scores a chunk's names against blocks of the candidate index, and the trained decider scores a few
options per step. With a thread per core, BLAS splits each of these products across threads that mostly
wait for one another, and on a busy or 2-core machine (ONNX Runtime embedding on another thread, other
processes) those waits cost more than the product itself. The limit is the process's BLAS setting while a
block runs (threadpoolctl), restored after it; the blocks never await, so an event loop's other tasks do
not run under it. They are meant for one thread at a time (routing and deciding run in the event loop's):
threadpoolctl lets one thread hold the setting, so blocks overlapping on two threads could leave the
process at one BLAS thread afterwards.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _controller() -> Any:
    """The process's BLAS thread pools (threadpoolctl), found once: numpy's among them, as its callers
    import numpy first."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[Any]:
    """A block whose BLAS calls run on the calling thread alone."""
    return _controller().limit(limits=1, user_api="blas")
