"""Decision-guided graph traversal: the engine, its config, results, traces and entry resolution."""

from graphwalk_core.traversal.answers import (
    Answer,
    Hop,
    WalkResult,
    follow_relation_path,
    metaqa_relation_path,
)
from graphwalk_core.traversal.config import METAQA_RELATION_GLOSSES, Budget, TraversalConfig
from graphwalk_core.traversal.engine import Traverser
from graphwalk_core.traversal.entry import (
    ChoiceEntryResolver,
    EntryCandidate,
    EntryResolver,
    NameEntryResolver,
    NameIndex,
)
from graphwalk_core.traversal.trace import Call, Step, Totals, Trace, render_trace

__all__ = [
    "METAQA_RELATION_GLOSSES",
    "Answer",
    "Budget",
    "Call",
    "ChoiceEntryResolver",
    "EntryCandidate",
    "EntryResolver",
    "Hop",
    "NameEntryResolver",
    "NameIndex",
    "Step",
    "Totals",
    "Trace",
    "TraversalConfig",
    "Traverser",
    "WalkResult",
    "follow_relation_path",
    "metaqa_relation_path",
    "render_trace",
]
