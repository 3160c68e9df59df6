"""A database that fails during a command (a lost connection, a restarted server, a lock or statement
timeout): an error naming the graph and the cause, instead of a traceback."""

from __future__ import annotations

from graphwalk_core.errors import BackendError


def unavailable() -> tuple[type[Exception], ...]:
    """SQLAlchemy's errors for a database that is gone or stuck (a lost connection, a lock never released);
    a bug (an IntegrityError) is none of them and keeps its traceback."""
    from sqlalchemy import exc

    return (
        exc.OperationalError,
        exc.InterfaceError,
        exc.DisconnectionError,
        exc.PendingRollbackError,
        exc.TimeoutError,
    )


def graph_failure(exc: Exception, graph: str, after: str) -> BackendError:
    """``exc``, raised by the database of ``graph`` during the command, as an error naming the graph (its
    password hidden) and the cause, then ``after``: what the failure left and what to do."""
    from graphwalk_core.stores.sql_engine import error_reason, redact_url

    return BackendError(f"the graph {redact_url(graph)} failed during the run: {error_reason(exc)}. {after}")
