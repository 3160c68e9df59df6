"""Decision backends: choice questions in, full probability distributions out.

The Jev and local backends and the factory import on first use (the Jev SDK and settings are heavy).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphwalk_core.decisions.base import (
    JEV_MAX_OPTIONS,
    ChoiceQuestion,
    ChoiceResult,
    DecisionBackend,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    JSONContent,
    Usage,
    choice_confidence,
    normalize_distribution,
    top_label,
)
from graphwalk_core.decisions.fake import FakeDecisionBackend

if TYPE_CHECKING:
    from graphwalk_core.decisions.factory import DECIDER_NAMES, make_decider
    from graphwalk_core.decisions.jev import JevBackend, check_pinned_model
    from graphwalk_core.decisions.local import LocalDecisionBackend, flatten_text
    from graphwalk_core.decisions.trained import TrainedDecisionBackend

_LAZY = {
    "DECIDER_NAMES": "factory",
    "make_decider": "factory",
    "JevBackend": "jev",
    "check_pinned_model": "jev",
    "LocalDecisionBackend": "local",
    "flatten_text": "local",
    "TrainedDecisionBackend": "trained",
}

__all__ = [
    "DECIDER_NAMES",
    "JEV_MAX_OPTIONS",
    "ChoiceQuestion",
    "ChoiceResult",
    "DecisionBackend",
    "DecisionError",
    "DecisionRequest",
    "DecisionResponse",
    "FakeDecisionBackend",
    "JSONContent",
    "JevBackend",
    "LocalDecisionBackend",
    "TrainedDecisionBackend",
    "Usage",
    "check_pinned_model",
    "choice_confidence",
    "flatten_text",
    "make_decider",
    "normalize_distribution",
    "top_label",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
