"""Error types: every user-facing failure names what was wrong."""


class GraphwalkError(Exception):
    """Base class for errors graphwalk raises on purpose."""


class InputError(GraphwalkError, ValueError):
    """Bad input from a user: a file, a line, a question or an option."""


class ConfigError(GraphwalkError):
    """A setting is missing or invalid (a model id, a provider, a path)."""


class BackendError(GraphwalkError):
    """A remote backend (decisions, LLM) failed after its retries."""
