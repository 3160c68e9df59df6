"""Checks the commands share on option values, and errors worded in a command's own flags."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from typer.models import ArgumentInfo, OptionInfo

from graphwalk_core.errors import GraphwalkError, InputError, NamesOptions
from graphwalk_core.files import file_in_the_way


def choice(value: str, allowed: Sequence[str], option: str) -> str:
    """``value`` when it is one of ``allowed``, else an InputError naming ``option`` and its choices."""
    if value not in allowed:
        raise InputError(f"{option} must be one of {', '.join(allowed)} (got {value!r})")
    return value


def check_hops(hops: Sequence[int] | None) -> None:
    """An InputError naming ``--hops`` when a MetaQA hop count is not 1, 2 or 3."""
    if any(h not in (1, 2, 3) for h in hops or []):
        raise InputError(f"--hops must be 1, 2 or 3, got {', '.join(map(str, hops or []))}")


def check_folder(path: Path, option: str) -> None:
    """An InputError naming ``option`` when the folder ``path``, or a folder above it, is a file."""
    if taken := file_in_the_way(path):
        raise InputError(f"{option} {path}: {taken} is a file, not a folder")


def check_decider_model(model: Path | None, decider: str | None, resolved: str) -> None:
    """An InputError when ``--decider-model`` names no folder, or the decider (``decider``, else the
    settings' ``resolved`` one) is not the trained one that reads it."""
    if model is None:
        return
    if not model.is_dir():
        raise InputError(f"--decider-model {model}: no such folder")
    chosen = decider or resolved
    if chosen != "trained":
        raise InputError(
            f"--decider-model is read by the trained decider only: add --decider trained (the decider "
            f"would be {chosen})"
        )


def flags(command: Callable[..., Any], hints: dict[str, Any] | None = None) -> dict[str, str]:
    """``command``'s options by parameter name, as its user types them (``n`` -> ``--n``, ``overrides``
    declared ``--set`` -> ``--set``, an argument ``repo`` -> ``REPO``).

    The core names an option by a key (see ``errors.NamesOptions``); the command's parameter of that
    name gives its flag, so a flag is declared once, with its option. ``hints``: the command's type hints,
    when the caller has them already.
    """
    out = {}
    if hints is None:
        hints = typing.get_type_hints(command, include_extras=True)
    for name, hint in hints.items():
        found = (m for m in getattr(hint, "__metadata__", ()) if isinstance(m, OptionInfo | ArgumentInfo))
        info = next(found, None)
        if isinstance(info, ArgumentInfo):
            out[name] = name.upper()
        elif info is not None:  # under Annotated, typer reads a str first argument as the first flag
            decls = [d for d in (info.default, *(info.param_decls or ())) if str(d).startswith("--")]
            out[name] = decls[0] if decls else _flag(name)
    return out


def _flag(name: str) -> str:
    """Typer's flag of a parameter declared without one: ``data_dir`` -> ``--data-dir``."""
    return "--" + name.replace("_", "-")


def error_text(exc: BaseException, labels: dict[str, str]) -> str:
    """``exc``'s message naming its options by ``labels`` (a key without one: by :func:`_flag`)."""
    if not isinstance(exc, NamesOptions):
        return str(exc)
    return exc.naming(lambda key: labels.get(key, _flag(key)))


def guarded(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with a graphwalk error as a clean exit (rc 2) whose message names its options by
    ``command``'s flags."""
    hints = typing.get_type_hints(command, include_extras=True)
    labels = flags(command, hints)

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except GraphwalkError as exc:
            typer.echo(f"error: {error_text(exc, labels)}", err=True)
            raise typer.Exit(2) from exc

    # resolved here: typer would resolve string annotations in this module's namespace
    run.__signature__ = inspect.signature(command, eval_str=True)  # type: ignore[attr-defined]
    run.__annotations__ = hints
    return run
