"""Decision backends: choice questions in, full probability distributions out."""

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
from graphwalk_core.decisions.factory import DECIDER_NAMES, make_decider
from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.decisions.jev import JevBackend, check_pinned_model
from graphwalk_core.decisions.local import LocalDecisionBackend, flatten_text

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
    "Usage",
    "check_pinned_model",
    "choice_confidence",
    "flatten_text",
    "make_decider",
    "normalize_distribution",
    "top_label",
]
