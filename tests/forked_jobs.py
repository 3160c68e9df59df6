"""Several processes started at once: a race between processes, reproduced with real ones."""

from __future__ import annotations

import os
from collections.abc import Callable


def at_once(job: Callable[[int], object], processes: int) -> list[int]:
    """The exit codes of ``processes`` forked children, each running ``job(i)`` once all of them are
    forked (they wait on one pipe the parent then closes): 0 when the job returned, 3 when it raised."""
    start = os.pipe()
    pids = []
    for i in range(processes):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 3
            try:
                os.close(start[1])
                os.read(start[0], 1)  # every child waits here until the parent closes its end
                job(i)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(start[0])
    os.close(start[1])  # all children start at once
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]


def in_background(job: Callable[[], object]) -> int:
    """A forked child running ``job()`` at once, while the caller goes on; its pid (see :func:`finished`)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            job()
            code = 0
        finally:
            os._exit(code)
    return pid


def finished(pid: int) -> int | None:
    """The exit code of the child ``pid`` once it ended (0: its job returned), else None (still running)."""
    done, status = os.waitpid(pid, os.WNOHANG)
    return os.waitstatus_to_exitcode(status) if done else None
