"""The ``decision_examples`` table: one row per decision step, from labeled questions or from traces.

*Weak supervision* (``source="weak"``): for a question with start node(s) and gold answers, every
relation path from the start up to ``max_depth`` hops is followed over the store's grouped adjacency
in the engine's order (:func:`~graphwalk_core.traversal.engine.sorted_groups`: every store gives the
same examples; a set larger than ``max_expand`` nodes is not expanded further), each end set is scored
against the gold answers by F1, and the best paths (highest F1, then fewest hops) become per-step
targets: at each step the share of best paths taking each offered move, STOP where they end. Only the question
text, its start and its gold answers are used, so the method works on any graph.

*Traces* (``source="trace"``): every step a decider answered in a walk's trace becomes a row whose
target is that decider's full distribution (a soft label).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphwalk_core.decisions.views import DecisionView, Move, mask_mentions, option_move
from graphwalk_core.errors import InputError
from graphwalk_core.eval.metrics import normalize_answer
from graphwalk_core.files import read_table_once, write_table_atomic
from graphwalk_core.model import NodeId
from graphwalk_core.stores.base import GraphStore, neighbor_groups
from graphwalk_core.traversal import prompts
from graphwalk_core.traversal.engine import sorted_groups
from graphwalk_core.traversal.trace import Trace

#: Decision kinds, for accuracy per kind: the first move, a later move, STOP.
KINDS = ("first", "later", "stop")

SCHEMA = pa.schema(
    [
        ("question_id", pa.string()),
        ("split", pa.string()),
        ("source", pa.string()),
        ("question", pa.string()),
        ("masked_question", pa.string()),
        ("depth", pa.int32()),
        ("path", pa.list_(pa.string())),
        ("option_labels", pa.list_(pa.string())),
        ("option_texts", pa.list_(pa.string())),
        ("target", pa.list_(pa.float64())),
        ("kind", pa.string()),
    ]
)


@dataclass(frozen=True)
class LabeledQuestion:
    """A question with its start node(s), the start names to mask and the gold answer names."""

    id: str
    text: str
    start: list[NodeId]
    gold: list[str]
    split: str = "train"
    mentions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DecisionExample:
    """One decision step with its target distribution over the offered moves (None: STOP)."""

    question_id: str
    split: str
    source: str
    question: str
    view: DecisionView
    target: tuple[float, ...]

    @property
    def kind(self) -> str:
        best = max(range(len(self.target)), key=self.target.__getitem__)
        if self.view.options[best] is None:
            return "stop"
        return "first" if not self.view.path else "later"


def move_label(move: Move | None) -> str:
    """A move as stored in the table: ``relation (direction)``, or ``STOP``."""
    return prompts.STOP if move is None else f"{move[0]} ({move[1]})"


def _parse_label(label: str) -> Move | None:
    if label == prompts.STOP:
        return None
    relation, _, direction = label.rpartition(" (")
    return relation, direction.rstrip(")")


# -- weak supervision ---------------------------------------------------------------------------


@dataclass
class _Node:
    """A relation path from the start: its end set, the moves offered there (None: not expanded)."""

    frontier: list[NodeId]
    options: list[Move] | None = None
    children: dict[Move, _Node] = field(default_factory=dict)


def _f1(found: Sequence[NodeId], gold_ids: frozenset[NodeId], n_gold: int, norm: dict[NodeId, str]) -> float:
    """F1 of the set ``found`` against ``n_gold`` gold names, ``gold_ids`` the nodes bearing them."""
    hits = gold_ids.intersection(found)
    if not hits:
        return 0.0
    precision, recall = len(hits) / len(found), len({norm[h] for h in hits}) / n_gold
    return 2 * precision * recall / (precision + recall)


class PathLabeler:
    """Best relation paths of labeled questions over one store (see module doc)."""

    def __init__(self, store: GraphStore, *, max_depth: int = 3, max_expand: int = 500) -> None:
        self.store = store
        self.max_depth = max_depth
        self.max_expand = max_expand
        self._norm: dict[NodeId, str] = {}
        self._by_name: dict[str, list[NodeId]] = {}

    async def _names(self) -> None:
        """Every node's normalized name, and the nodes per name (read once)."""
        if not self._norm:
            async for node in self.store.iter_nodes(batch_size=10_000):
                name = self._norm[node.id] = normalize_answer(node.name)
                self._by_name.setdefault(name, []).append(node.id)

    async def _expand(self, node: _Node, start: frozenset[NodeId]) -> None:
        groups = await neighbor_groups(self.store, node.frontier, direction="both")
        node.options = []
        for key, targets in sorted_groups(groups).items():  # the engine's order, whatever the store's
            kept = targets if start.isdisjoint(targets) else [t for t in targets if t not in start]
            if kept:
                move: Move = (key[0], key[1])
                node.options.append(move)
                node.children[move] = _Node(kept)

    async def best_paths(
        self, start: Sequence[NodeId], answers: Sequence[str]
    ) -> tuple[_Node, list[tuple[Move, ...]], float]:
        """The search tree, the best paths and their F1 (0 and no path when nothing reaches a gold node).

        Paths grow a hop at a time until one reaches F1 = 1 (longer paths could only tie). The last hop
        is taken only from sets touching a gold node's neighborhood.
        """
        await self._names()
        gold = frozenset(filter(None, map(normalize_answer, answers)))
        gold_ids = frozenset(n for g in gold for n in self._by_name.get(g, ()))
        excluded = frozenset(start)
        root = _Node(list(dict.fromkeys(start)))
        best: list[tuple[Move, ...]] = []
        best_f1 = 0.0
        if not gold_ids:
            return root, best, best_f1
        near_gold = frozenset(
            n
            for ns in (await neighbor_groups(self.store, list(gold_ids), direction="both")).values()
            for n in ns
        )
        layer: list[tuple[tuple[Move, ...], _Node]] = [((), root)]
        for depth in range(self.max_depth):
            nxt: list[tuple[tuple[Move, ...], _Node]] = []
            last = depth == self.max_depth - 1
            for path, node in layer:
                if len(node.frontier) > self.max_expand or (last and near_gold.isdisjoint(node.frontier)):
                    continue
                await self._expand(node, excluded)
                for move, child in node.children.items():
                    score = _f1(child.frontier, gold_ids, len(gold), self._norm)
                    if score > best_f1 + 1e-9:  # strictly better: shorter paths win ties
                        best_f1, best = score, [(*path, move)]
                    elif score > 0 and abs(score - best_f1) <= 1e-9 and len(path) + 1 == len(best[0]):
                        best.append((*path, move))
                    nxt.append(((*path, move), child))
            if best_f1 >= 1 - 1e-9:
                break
            layer = nxt
        return root, best, best_f1

    async def examples(
        self, question: LabeledQuestion, *, allow_stop_at_start: bool = False
    ) -> list[DecisionExample]:
        """The question's decision steps along its best paths (none when no path reaches a gold node)."""
        root, best, _ = await self.best_paths(question.start, question.gold)
        if not best:
            return []
        masked = mask_mentions(question.text, question.mentions or list(question.start))
        out: list[DecisionExample] = []
        prefixes = list(dict.fromkeys(p[:i] for p in best for i in range(len(p) + 1)))
        for prefix in prefixes:
            node = root
            for move in prefix:
                node = node.children[move]
            if node.options is None:  # a best path ends here: the moves it could still take
                await self._expand(node, frozenset(question.start))
                assert node.options is not None
            offered: list[Move | None] = list(node.options)
            if prefix or allow_stop_at_start:
                offered.append(None)
            if len(offered) < 2:  # the engine asks nothing (forced move or dead end)
                continue
            d = len(prefix)
            nexts = [p[d] if len(p) > d else None for p in best if p[:d] == prefix]
            counts = [nexts.count(m) for m in offered]
            total = sum(counts)
            view = DecisionView(masked, prefix, tuple(offered))
            target = tuple(c / total for c in counts)
            out.append(DecisionExample(question.id, question.split, "weak", question.text, view, target))
        return out


async def weak_examples(
    store: GraphStore,
    questions: Iterable[LabeledQuestion],
    *,
    max_depth: int = 3,
    max_expand: int = 500,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[DecisionExample], int]:
    """Examples of every question (see module doc) and how many questions had no path to a gold node."""
    labeler = PathLabeler(store, max_depth=max_depth, max_expand=max_expand)
    out: list[DecisionExample] = []
    unlabeled = 0
    for question in questions:
        found = await labeler.examples(question)
        unlabeled += not found
        out.extend(found)
        if progress is not None:
            progress(1)
    return out, unlabeled


# -- traces -------------------------------------------------------------------------------------


def trace_examples(trace: Trace, *, question_id: str, split: str = "train") -> list[DecisionExample]:
    """Each step a decider answered, with its full distribution as the target."""
    by_child: dict[int, tuple[int, Move]] = {}  # child beam id -> (parent beam id, move taken)
    for step in trace.steps:
        for label, child in step.kept.items():
            if label != prompts.STOP and label in step.options:
                by_child[child] = (step.beam_id, option_move(label, step.options[label]))
    # every start's names, as the live decider masks them (a walk from several starts has a first step each)
    start_names = [name for s in trace.steps if s.depth == 0 for name in s.current_names]
    masked = mask_mentions(trace.query, list(dict.fromkeys([*trace.start, *start_names])))
    out = []
    for step in trace.steps:
        if step.forced or not step.distribution:
            continue
        path: list[Move] = []
        beam = step.beam_id
        while beam in by_child:
            beam, move = by_child[beam]
            path.append(move)
        labels = list(step.options)
        view = DecisionView(
            masked,
            tuple(reversed(path)),
            tuple(
                None if label == prompts.STOP else option_move(label, step.options[label]) for label in labels
            ),
        )
        target = tuple(float(step.distribution.get(label, 0.0)) for label in labels)
        if sum(target) <= 0:
            continue
        out.append(DecisionExample(question_id, split, "trace", trace.query, view, target))
    return out


def read_traces(folder: Path) -> Iterable[tuple[str, Trace]]:
    """(id, trace) for every ``*.json`` trace file (``graphwalk query --trace``) under ``folder``, sorted."""
    files = sorted(folder.rglob("*.json"))
    if not files:
        raise InputError(f"{folder}: no trace files (*.json)")
    for path in files:
        try:
            trace = Trace.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"{path}: not a walk trace ({str(exc).splitlines()[0]})") from exc
        yield path.relative_to(folder).as_posix(), trace


# -- the table ----------------------------------------------------------------------------------


def to_table(examples: Sequence[DecisionExample]) -> pa.Table:
    """The ``decision_examples`` table (schema :data:`SCHEMA`)."""
    from graphwalk_core.decisions.views import move_text

    rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for ex in examples:
        last = ex.view.path[-1] if ex.view.path else None
        rows["question_id"].append(ex.question_id)
        rows["split"].append(ex.split)
        rows["source"].append(ex.source)
        rows["question"].append(ex.question)
        rows["masked_question"].append(ex.view.question)
        rows["depth"].append(len(ex.view.path))
        rows["path"].append([move_label(m) for m in ex.view.path])
        rows["option_labels"].append([move_label(m) for m in ex.view.options])
        rows["option_texts"].append([move_text(m, last) for m in ex.view.options])
        rows["target"].append(list(ex.target))
        rows["kind"].append(ex.kind)
    return pa.Table.from_pydict(rows, schema=SCHEMA)


def from_table(table: pa.Table) -> list[DecisionExample]:
    """Examples back from a ``decision_examples`` table."""
    missing = [name for name in SCHEMA.names if name not in table.column_names]
    if missing:
        raise InputError(f"decision_examples table lacks columns {missing}")
    cols = table.to_pydict()
    out = []
    for i in range(table.num_rows):
        view = DecisionView(
            cols["masked_question"][i],
            tuple(m for m in map(_parse_label, cols["path"][i]) if m is not None),
            tuple(_parse_label(label) for label in cols["option_labels"][i]),
        )
        out.append(
            DecisionExample(
                cols["question_id"][i], cols["split"][i], cols["source"][i], cols["question"][i], view,
                tuple(cols["target"][i]),
            )
        )  # fmt: skip
    return out


def write_examples(examples: Sequence[DecisionExample], path: Path) -> Path:
    """Write the examples table to ``path`` atomically (a failed write leaves the earlier file)."""
    return write_table_atomic(to_table(examples), path)


def read_examples_table(path: Path) -> pa.Table:
    """The examples table at ``path`` (with its metadata), read through one open file."""
    try:
        return read_table_once(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{path}: not a readable decision_examples Parquet file ({exc})") from exc


def read_examples(path: Path) -> list[DecisionExample]:
    return from_table(read_examples_table(path))


def examples_hash(examples: Sequence[DecisionExample]) -> str:
    """A content hash of the examples (order-sensitive), recorded in a model's manifest."""
    digest = hashlib.sha256()
    for ex in examples:
        row = [ex.question_id, ex.split, ex.source, ex.view.question, list(ex.view.path),
               [list(m) if m else None for m in ex.view.options], list(ex.target)]  # fmt: skip
        digest.update(json.dumps(row, separators=(",", ":")).encode())
    return digest.hexdigest()
