"""Error types: every user-facing failure names what was wrong."""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class GraphwalkError(Exception):
    """Base class for errors graphwalk raises on purpose."""


class InputError(GraphwalkError, ValueError):
    """Bad input from a user: a file, a line, a question or an option."""


class ConfigError(GraphwalkError):
    """A setting is missing or invalid (a model id, a provider, a path)."""


class BackendError(GraphwalkError):
    """A remote backend (decisions, LLM) failed after its retries."""


class _Fields(dict[str, object]):
    """``str.format_map`` fields: the given values, else an option key's label (the key by default)."""

    def __init__(self, values: Mapping[str, object], labels: Mapping[str, str]) -> None:
        super().__init__(values)
        self.labels = labels

    def __missing__(self, key: str) -> str:
        return self.labels.get(key, key)


class NamesOptions(Exception):
    """An error that names its caller's options by neutral keys, the core functions' parameter names
    (``n``, ``kb``, ``overrides``): each front end names them in its own terms with :meth:`render` (the
    CLI by its flags, Dagster by its run-config fields); ``str()`` names them by their keys.

    ``template`` is a ``str.format`` string: a field in ``values`` is filled with its value, any other
    field is an option key (``OptionError("{n} must be at least 1, got {got}", got=0)``).
    """

    def __init__(self, template: str, **values: object) -> None:
        self.template = template
        self.values = values
        super().__init__(self.render({}))

    def render(self, labels: Mapping[str, str]) -> str:
        """The message, naming each option by its label in ``labels`` (else by its key)."""
        return self.template.format_map(_Fields(self.values, labels))

    def naming(self, label: Callable[[str], str]) -> str:
        """The message, naming each option its key's ``label``."""
        return self.render({key: label(key) for key in self.options()})

    def options(self) -> list[str]:
        """The option keys the message names, in order."""
        fields = (field for _, field, _, _ in string.Formatter().parse(self.template) if field)
        return list(dict.fromkeys(f for f in fields if f not in self.values))

    def __reduce__(self) -> tuple[Any, ...]:
        return functools.partial(type(self), **self.values), (self.template,)


class OptionError(NamesOptions, InputError):
    """Bad input in an option, named in the caller's terms (see :class:`NamesOptions`)."""


class MissingFilesError(InputError):
    """Data files that are not there; ``missing``: each one's path as the error names it."""

    def __init__(self, message: str, missing: Sequence[str]) -> None:
        super().__init__(message)
        self.missing = tuple(missing)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.missing)


class MissingFileError(OptionError):
    """A data file that is not where an option put it (``file``: its path)."""

    @property
    def missing(self) -> tuple[str, ...]:
        return (str(self.values["file"]),)


class OptionConfigError(NamesOptions, ConfigError):
    """A setup problem whose remedy is an option, named in the caller's terms (see :class:`NamesOptions`)."""
