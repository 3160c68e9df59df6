"""The walk's trace: every step and call, JSON-serializable, with a readable rich rendering."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from graphwalk_core.model import NodeId
from graphwalk_core.traversal.entry import EntryCandidate


class Step(BaseModel):
    """One question asked for one beam at one depth (or a forced move / forced STOP, with no call)."""

    depth: int
    beam_id: int
    parent_beam_id: int | None = None
    current: list[NodeId]
    current_names: list[str] = Field(default_factory=list)
    frontier_size: int = 1
    options: dict[str, Any] = Field(default_factory=dict)
    pruned: list[str] = Field(default_factory=list, description="options dropped before the call")
    pruned_reason: str | None = Field(default=None, description="prefilter | truncated")
    pruned_similarity: list[float] = Field(default_factory=list, description="prefilter: per pruned option")
    distribution: dict[str, float] = Field(default_factory=dict)
    distribution_used: dict[str, float] = Field(default_factory=dict)
    chosen: str | None = None
    kept: dict[str, int] = Field(default_factory=dict, description="label -> child beam id")
    forced: bool = False
    step_logp: float | None = None
    cum_logp: float | None = None
    norm_score: float | None = None
    call_id: str | None = None
    confidence: float | None = None
    note: str | None = None


class Call(BaseModel):
    """One decision call; latency and cost belong here, since one call serves several beams."""

    call_id: str
    n_questions: int
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    request_id: str | None = None
    model: str = ""


class Totals(BaseModel):
    decision_calls: int = 0
    questions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    call_latency_s: float = 0.0
    wall_s: float = 0.0
    expansions: int = 0
    nodes_reached: int = 0
    forced_steps: int = 0


class Trace(BaseModel):
    query: str
    start: list[NodeId]
    links: list[EntryCandidate] = Field(
        default_factory=list, description="how each start was found in the query (empty when given)"
    )
    config: dict[str, Any]
    model_ids: list[str]
    answer_type: str | None = None
    steps: list[Step] = Field(default_factory=list)
    calls: list[Call] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)

    def add_call(self, call: Call) -> None:
        self.calls.append(call)
        t = self.totals
        t.decision_calls += 1
        t.questions += call.n_questions
        t.input_tokens += call.input_tokens
        t.output_tokens += call.output_tokens
        t.call_latency_s += call.latency_s
        if call.cost_usd is not None:
            t.cost_usd = (t.cost_usd or 0.0) + call.cost_usd


def _option_text(description: Any) -> str:
    if isinstance(description, dict):
        return ", ".join(f"{k}={v}" for k, v in description.items())
    return str(description)


def render_trace(
    trace: Trace, console: Console | None = None, *, max_options: int = 8, start: list[str] | None = None
) -> None:
    """Print the trace as a tree of depths and beams, then a table of calls; ``start``: how to show the
    start nodes (default: their ids)."""
    console = console or Console()
    root = Tree(
        f"[bold]{escape(trace.query)}[/bold]  start={escape(str(trace.start if start is None else start))}  "
        f"models={escape(str(trace.model_ids))}"
    )
    by_depth: dict[int, Tree] = {}
    for step in trace.steps:
        depth_node = by_depth.get(step.depth)
        if depth_node is None:
            depth_node = by_depth[step.depth] = root.add(f"depth {step.depth}")
        shown = step.current_names or step.current
        here = escape(", ".join(shown))
        if step.frontier_size > len(shown):
            here += f" ... ({step.frontier_size} nodes)"
        how = "forced" if step.forced else f"call {step.call_id}"
        score = "" if step.norm_score is None else f" score={step.norm_score:.3f}"
        label = f"beam {step.beam_id} at [cyan]{here}[/cyan] -> [green]{step.chosen}[/green] ({how}){score}"
        if step.note:
            label += f" [dim]{escape(step.note)}[/dim]"
        node = depth_node.add(label)
        ranked = sorted(step.distribution.items(), key=lambda kv: -kv[1])[:max_options]
        for opt_label, p in ranked:
            node.add(f"{opt_label} p={p:.3f}: {escape(_option_text(step.options.get(opt_label)))}")
        if step.pruned:
            node.add(f"[dim]{len(step.pruned)} options pruned ({step.pruned_reason})[/dim]")
    console.print(root)
    if trace.calls:
        table = Table("call", "questions", "latency s", "in tok", "out tok", "cost $", "model")
        for c in trace.calls:
            cost = "" if c.cost_usd is None else f"{c.cost_usd:.6f}"
            table.add_row(
                c.call_id, str(c.n_questions), f"{c.latency_s:.3f}", str(c.input_tokens),
                str(c.output_tokens), cost, escape(c.model),
            )  # fmt: skip
        console.print(table)
    t = trace.totals
    console.print(
        f"calls={t.decision_calls} questions={t.questions} input_tokens={t.input_tokens} "
        f"expansions={t.expansions} nodes={t.nodes_reached} wall={t.wall_s:.3f}s"
    )
