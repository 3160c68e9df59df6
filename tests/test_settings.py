"""Settings read from GRAPHWALK_* variables: an invalid value names the variable that set it."""

from __future__ import annotations

import sys

import pytest

from graphwalk_core.cli import main
from graphwalk_core.settings import SettingsError, get_settings


@pytest.fixture
def fresh_settings():
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_an_invalid_variable_is_named_with_its_value(
    monkeypatch: pytest.MonkeyPatch, fresh_settings: None
) -> None:
    """It was pydantic's dump ("1 validation error for GraphwalkSettings / decider / Input should be ...
    For further information visit https://..."), naming the field, not the variable to fix."""
    monkeypatch.setenv("GRAPHWALK_DECIDER", "bogus")
    monkeypatch.setenv("GRAPHWALK_LOCAL_TEMPERATURE", "warm")
    with pytest.raises(SettingsError) as caught:
        get_settings()
    assert str(caught.value) == (
        "invalid setting (environment or .env): GRAPHWALK_DECIDER='bogus': Input should be 'jev', 'local', "
        "'trained' or 'fake'; GRAPHWALK_LOCAL_TEMPERATURE='warm': Input should be a valid number, unable to "
        "parse string as a number"
    )


def test_a_command_says_which_variable_to_fix(
    monkeypatch: pytest.MonkeyPatch, fresh_settings: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``graphwalk sql`` (any command that reads the settings) ended in a traceback of pydantic's error."""
    monkeypatch.setenv("GRAPHWALK_DECIDER", "bogus")
    monkeypatch.setattr(sys, "argv", ["graphwalk", "sql", "select 1"])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        "error: invalid setting (environment or .env): GRAPHWALK_DECIDER='bogus': Input should be 'jev', "
        "'local', 'trained' or 'fake'\n"
    )
