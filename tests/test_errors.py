"""Errors that name options by neutral keys: each front end renders them in its own terms."""

from __future__ import annotations

import pickle
from pathlib import Path

from graphwalk_core.cli.options import error_text
from graphwalk_core.errors import ConfigError, InputError, OptionConfigError, OptionError


def test_keys_are_the_fields_not_given_as_values_and_user_text_stays_literal() -> None:
    exc = OptionError(
        "{what} not found: {file} (check {path}, then {path} or {data_dir}); got {text!r}",
        what="KB",
        file=Path("/x/{y}"),
        text="a{b",
    )
    assert isinstance(exc, InputError)
    assert exc.options() == ["path", "data_dir"]
    assert str(exc) == "KB not found: /x/{y} (check path, then path or data_dir); got 'a{b'"
    assert exc.render({"path": "--questions"}) == (
        "KB not found: /x/{y} (check --questions, then --questions or data_dir); got 'a{b'"
    )
    assert error_text(exc, {"path": "--questions"}) == (
        "KB not found: /x/{y} (check --questions, then --questions or --data-dir); got 'a{b'"
    )
    assert error_text(ValueError("{path}"), {"path": "--questions"}) == "{path}"


def test_a_pickled_error_keeps_its_class_template_and_values() -> None:
    exc = OptionConfigError("cannot load {where}; use {data_dir}", where="x{1}")
    again = pickle.loads(pickle.dumps(exc))
    assert isinstance(again, OptionConfigError) and isinstance(again, ConfigError)
    assert (again.template, again.values, str(again)) == (exc.template, {"where": "x{1}"}, str(exc))
    assert again.render({"data_dir": "`data_dir`"}) == "cannot load x{1}; use `data_dir`"
