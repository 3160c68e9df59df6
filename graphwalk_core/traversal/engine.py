"""The traversal engine: greedy, beam and sampled walks on one code path, with engine-owned safety.

Each depth: every open walk gets one local choice question (its options: edges in entity mode,
relations in relation mode, plus STOP); the questions go out in as few calls as the token budget
allows; then greedy/beam keep the k best candidates (finished walks compete for the slots) and
sampled walks each draw their own move. The engine, not the decider, enforces the visited set, the
depth cap and the expansion/node budgets, so a decider that never stops still terminates.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from graphwalk_core.decisions.base import (
    ChoiceQuestion,
    DecisionBackend,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    Usage,
    choice_confidence,
    normalize_distribution,
    top_label,
)
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.errors import InputError
from graphwalk_core.model import NodeId
from graphwalk_core.stores.base import (
    Adjacent,
    GraphStore,
    GroupedAdjacency,
    NeighborGroups,
    group_adjacent,
    group_order,
    merge_groups,
    offers,
    one_state,
)
from graphwalk_core.traversal import prompts
from graphwalk_core.traversal.answers import WalkResult, build_answers
from graphwalk_core.traversal.batching import check_state, split_batches
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.name_vectors import NameVectors
from graphwalk_core.traversal.prefilter import Prefilter, split_top
from graphwalk_core.traversal.sampling import draw, used_distribution, walk_rng
from graphwalk_core.traversal.scoring import Beam, HopRef, normalized_score, step_logp
from graphwalk_core.traversal.trace import Call, Step, Trace

Dir = Literal["out", "in"]


class _Abort(Exception):
    """A budget guardrail tripped; the walk ends with status ``aborted``."""


@dataclass(slots=True)
class _Move:
    relation: str
    direction: Dir
    target: NodeId | None = None  # entity mode
    reached: list[NodeId] | None = None  # relation mode: every distinct target


@dataclass(slots=True)
class _Pruned:
    texts: list[str] = field(default_factory=list)
    reason: str | None = None
    similarity: list[float] = field(default_factory=list)


@dataclass(slots=True)
class _Prepared:
    """One open walk's options at this depth."""

    beam: Beam
    kind: Literal["ask", "forced_move", "dead_end"]
    moves: dict[str, _Move] = field(default_factory=dict)
    step: Step | None = None
    question: ChoiceQuestion | None = None


def sorted_groups(groups: NeighborGroups, *, members: bool = True) -> NeighborGroups:
    """``groups`` in :func:`~graphwalk_core.stores.base.group_order`, each group's neighbors sorted
    (``members=False``: new lists in the store's order, for a caller that sorts what it uses)."""
    keys = sorted(groups, key=group_order)
    return {key: sorted(groups[key]) if members else list(groups[key]) for key in keys}


class Traverser:
    """Walks a graph from start nodes to answers, asking ``decider`` at every real choice.

    A store offering :class:`~graphwalk_core.stores.base.GroupedAdjacency` groups adjacency itself
    (and keeps it current). Otherwise adjacency read from the store is cached per node (up to
    ``adjacency_cache_size`` nodes; 0 disables it): reuse a Traverser across questions on a graph that
    does not change, and call :meth:`clear_cache` after writing to the store. With an embedder, hub
    neighbours and capped frontiers are ranked from the graph's :class:`NameVectors` (``names``, e.g.
    one warmed ahead; by default one filled as walks meet names): a name is embedded once per graph,
    never one text per neighbour per step.
    """

    def __init__(
        self,
        store: GraphStore,
        decider: DecisionBackend,
        embedder: Embedder | None = None,
        config: TraversalConfig | None = None,
        *,
        names: NameVectors | None = None,
        adjacency_cache_size: int = 200_000,
    ) -> None:
        self.store = store
        self.decider = decider
        self.embedder = embedder
        self.config = config or TraversalConfig()
        self.config.check_backend(decider.max_options)
        self.prefilter = (
            Prefilter(embedder, names=names if names is not None else NameVectors(store, embedder))
            if embedder is not None
            else None
        )
        self._node_types: list[str] | None = None
        self.adjacency_cache_size = adjacency_cache_size
        self.config_json = self.config.model_dump(mode="json")
        self._grouped_store = store if offers(store, GroupedAdjacency) else None
        self._adjacency: dict[NodeId, NeighborGroups] = {}

    def clear_cache(self) -> None:
        """Forget cached adjacency, node types and name rows (call after the store changes)."""
        self._adjacency.clear()
        self._node_types = None
        if self.prefilter is not None:
            self.prefilter.names.forget()

    async def neighbor_groups(self, nodes: Sequence[NodeId], *, members: bool = True) -> NeighborGroups:
        """The distinct neighbors of ``nodes`` per (relation, direction), in :func:`sorted_groups` order
        (``members=False``: each group's neighbors unsorted)."""
        if self._grouped_store is not None:
            found = self._grouped_store.neighbor_groups(nodes, direction=self.config.direction)
            return sorted_groups(found, members=members)
        per_node = []
        for node in nodes:  # hubs: thousands of cached nodes, no await each
            cached = self._adjacency.get(node)
            per_node.append(cached if cached is not None else await self._cached_groups(node))
        return sorted_groups(merge_groups(per_node), members=members)

    async def group(self, node: NodeId, relation: str, direction: Dir) -> Sequence[NodeId] | None:
        """``node``'s distinct neighbors by ``relation`` in ``direction``, sorted (None: none that way)."""
        if self._grouped_store is not None:
            groups = self._grouped_store.neighbor_groups((node,), direction=direction, edge_types=(relation,))
        else:
            groups = await self._cached_groups(node)
        found = groups.get((relation, direction))
        return None if found is None else sorted(found)

    async def _cached_groups(self, node: NodeId) -> NeighborGroups:
        cached = self._adjacency.get(node)
        if cached is not None:
            return cached
        grouped = group_adjacent(await self.store.adjacent(node, direction=self.config.direction))
        if self.adjacency_cache_size > 0:
            if len(self._adjacency) >= self.adjacency_cache_size:
                self._adjacency.clear()
            self._adjacency[node] = grouped
        return grouped

    async def node_types(self) -> list[str]:
        """The graph's distinct node types (scanned once, for the answer-type question)."""
        if self._node_types is None:
            self._node_types = await self.store.node_types()
        return self._node_types

    async def walk(self, question: str, start: list[NodeId]) -> WalkResult:
        """Answer ``question`` from ``start``, reading one committed state of a store that offers it.
        Budget aborts and backend failures come back as results."""
        if not question or not question.strip():
            raise InputError("the question is empty")
        if not start:
            raise InputError("no start node given")
        check_state(prompts.build_state(question.strip()))
        async with one_state(self.store):  # what another process writes meanwhile is not half in it
            found = await self.store.get_nodes(start)
            missing = [s for s in start if s not in found]
            if missing:
                raise InputError(f"start node(s) not in the graph: {missing}")
            return await _Walk(self, question.strip(), list(dict.fromkeys(start))).run()


class _Walk:
    """The state of one ``Traverser.walk`` call."""

    def __init__(self, traverser: Traverser, query: str, start: list[NodeId]) -> None:
        self.traverser = traverser
        self.cfg = traverser.config
        self.store = traverser.store
        self.query = query
        self.start = start
        self.start_set = frozenset(start)
        self.relation_mode = self.cfg.hop_mode == "relation"
        self.sampling = self.cfg.strategy == "sample"
        self.max_shown = traverser.decider.max_options - 1
        self.trace = Trace(
            query=query,
            start=start,
            config=traverser.config_json,
            model_ids=[traverser.decider.model_id],
        )
        self.next_id = 0
        self.expansions = 0
        self.reached: set[NodeId] = set(start)
        self.answer_hint: str | None = None
        self.ask_answer_type = self.cfg.answer_type == "hint"
        self.rngs = (
            [walk_rng(self.cfg.seed, query, i) for i in range(self.cfg.width)] if self.sampling else []
        )
        self._pool: list[Beam] = []
        self._names: dict[NodeId, str] = {}
        self._types: dict[NodeId, str] = {}
        self._start_names: list[str] = []
        self._call_of: dict[str, str] = {}
        self._confidence: dict[str, float] = {}

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    async def run(self) -> WalkResult:
        t0 = time.perf_counter()
        n_walks = self.cfg.width if self.sampling else 1
        # relation mode walks from the whole start set; entity mode from each start node
        seeds = [list(self.start)] if self.relation_mode else [[s] for s in self.start]
        pool = [
            Beam(id=self._new_id(), parent=None, walk=i, start=tuple(self.start),
                 frontier=list(seed), visited=set(seed))
            for i in range(n_walks)
            for seed in seeds
        ]  # fmt: skip
        status: Literal["ok", "aborted", "error"] = "ok"
        reason: str | None = None
        error: str | None = None
        starts = await self._remember(self.start[:10])
        self._start_names = [starts[s].name if s in starts else s for s in self.start[:10]]
        try:
            pool = await self._search(pool)
        except _Abort as exc:
            status, reason = "aborted", str(exc)
            pool = self._pool
        except Exception as exc:  # any backend failure: report it, never raise
            status, error = "error", f"{type(exc).__name__}: {exc}"
            pool = self._pool
        if status != "ok":
            for beam in pool:
                if not beam.finished:
                    beam.terminated_by = status if status == "error" else "aborted"
        answers = await build_answers(
            self.store,
            pool,
            alpha=self.cfg.length_alpha,
            floor=self.cfg.prob_floor,
            by_votes=self.sampling,
            relation_mode=self.relation_mode,
            max_witnesses=self.cfg.max_witnesses,
            grouped=self.traverser.group,
        )
        totals = self.trace.totals
        totals.expansions, totals.nodes_reached = self.expansions, len(self.reached)
        totals.wall_s = time.perf_counter() - t0
        return WalkResult(
            status=status,
            question=self.query,
            start=self.start,
            answers=answers,
            terminated_by=answers[0].terminated_by if answers else None,
            abort_reason=reason,
            error=error,
            decider=self.traverser.decider.model_id,
            trace=self.trace,
        )

    async def _search(self, pool: list[Beam]) -> list[Beam]:
        self._pool = pool
        budget = self.cfg.budget
        depth = 0
        while True:
            open_beams = [b for b in self._pool if not b.finished]
            if not open_beams:
                return self._pool
            if depth >= budget.max_depth:
                for b in open_beams:
                    b.terminated_by = "max_depth"
                return self._pool
            prepared = [await self._prepare(b, depth) for b in open_beams]
            dists, over_tokens = await self._decide(prepared, depth)
            self._pool = await self._advance(prepared, dists)
            if over_tokens:
                raise _Abort(
                    f"max_input_tokens: {self.trace.totals.input_tokens} > {budget.max_input_tokens}"
                )
            if len(self.reached) > budget.max_nodes:
                raise _Abort(f"max_nodes: reached {len(self.reached)} > {budget.max_nodes} nodes")
            depth += 1

    # -- options -------------------------------------------------------------------------------

    async def _neighbor_groups(self, nodes: Sequence[NodeId], *, members: bool = True) -> NeighborGroups:
        """One adjacency read per node (counted against ``max_expansions``), grouped and merged."""
        self._count_expansions(len(nodes))
        return await self.traverser.neighbor_groups(nodes, members=members)

    def _count_expansions(self, n: int) -> None:
        """Count ``n`` adjacency reads; past the budget, stop at it and abort the walk."""
        limit = self.cfg.budget.max_expansions
        if self.expansions + n > limit:
            self.expansions = limit
            raise _Abort(f"max_expansions: {limit} adjacency reads used")
        self.expansions += n

    async def _prepare(self, beam: Beam, depth: int) -> _Prepared:
        if self.relation_mode:
            keyed, pruned, names = await self._relation_moves(beam)
        else:
            keyed, pruned, names = await self._entity_moves(beam)
        step = Step(  # validated: pydantic's model_construct is slower here (default factories)
            depth=depth,
            beam_id=beam.id,
            parent_beam_id=beam.parent,
            current=beam.frontier[:10],
            current_names=names,
            frontier_size=len(beam.frontier),
            pruned=pruned.texts,
            pruned_reason=pruned.reason,
            pruned_similarity=pruned.similarity,
        )
        allow_stop = depth > 0 or self.cfg.allow_stop_at_start
        if not keyed:
            return _Prepared(beam, "dead_end", step=step)
        moves = {f"o{i + 1}": move for i, (move, _) in enumerate(keyed)}
        if len(moves) == 1 and not allow_stop:
            step.options = {"o1": keyed[0][1]}
            return _Prepared(beam, "forced_move", moves, step)
        options: dict[str, Any] = {label: desc for label, (_, desc) in zip(moves, keyed, strict=True)}
        if allow_stop:
            options[prompts.STOP] = prompts.stop_description(self.cfg.stop_style, names, len(beam.frontier))
        step.options = options
        path = [self._hop_text(h) for h in beam.hops]
        current_type = None
        if self.cfg.show_types and not self.relation_mode:
            current_type = self._types.get(beam.frontier[0])
        question = ChoiceQuestion(
            key=f"b{beam.id}",
            instructions=prompts.instructions(
                self.cfg.hop_mode,
                path,
                names,
                len(beam.frontier),
                current_type=current_type,
                answer_hint=self.answer_hint,
                start=self._start_names,
            ),
            options=options,
        )
        return _Prepared(beam, "ask", moves, step, question)

    def _hop_text(self, hop: HopRef) -> str:
        if hop.source is None:
            return f"{hop.relation} ({hop.direction})"
        src, dst = (hop.source, hop.target) if hop.direction == "out" else (hop.target, hop.source)
        return prompts.edge_text(self._names.get(src, src), hop.relation, self._names.get(dst, dst))  # type: ignore[arg-type]

    async def _remember(self, ids: list[NodeId]) -> dict[NodeId, Any]:
        """Fetch nodes and remember their names/types for paths and instructions."""
        nodes = await self.store.get_nodes(ids)
        for nid, node in nodes.items():
            self._names[nid] = node.name
            self._types[nid] = node.type
        return nodes

    async def _entity_moves(self, beam: Beam) -> tuple[list[tuple[_Move, Any]], _Pruned, list[str]]:
        current = beam.frontier[0]
        grouped = await self._neighbor_groups((current,))
        adjacent = [Adjacent(rel, nb, d) for (rel, d), nbs in grouped.items() for nb in nbs]  # type: ignore[arg-type]
        if self.cfg.exclude_visited:
            visited = beam.visited
            adjacent = [a for a in adjacent if a[1] not in visited]
        elif self.cfg.direction == "both":  # a self-loop is read both ways: offer its edge once, outgoing
            adjacent = [a for a in adjacent if a[2] == "out" or a[1] != current]
        pruned = _Pruned()
        if len(adjacent) > min(self.cfg.prefilter_threshold, self.max_shown):
            adjacent, pruned = await self._prune(adjacent)
        nodes = await self._remember([current, *dict.fromkeys(a[1] for a in adjacent)])
        cur_name = nodes[current].name if current in nodes else current
        show_types, glosses = self.cfg.show_types, self.cfg.relation_glosses
        keyed = [
            (_Move(rel, d, target=nb),
             prompts.entity_option(rel, d, cur_name, nodes[nb], show_types=show_types, glosses=glosses))
            for rel, nb, d in adjacent
            if nb in nodes
        ]  # fmt: skip
        return keyed, pruned, [cur_name]

    async def _prune(self, adjacent: list[Adjacent]) -> tuple[list[Adjacent], _Pruned]:
        """Entity-mode hub: the top-N (relation, neighbour) options by query similarity, ranked from the
        graph's cached name vectors (pruned options are recorded as ``relation name``); without an
        embedder, the first ``max_options - 1`` in store order."""
        prefilter = self.traverser.prefilter
        if prefilter is None or len(adjacent) <= self.cfg.prefilter_threshold:
            kept, pruned = self._cut([f"{rel} {nb}" for rel, nb, _ in adjacent])
            return [adjacent[i] for i in kept], pruned
        targets = [nb for _, nb, _ in adjacent]
        sims = await prefilter.node_similarities(self.query, targets, [rel for rel, _, _ in adjacent])
        kept, dropped = split_top(sims, min(self.cfg.prefilter_top_n, self.max_shown))
        nodes = await self.store.get_nodes(list(dict.fromkeys(targets[i] for i, _ in dropped)))
        texts = [f"{adjacent[i][0]} {nodes[targets[i]].name if targets[i] in nodes else targets[i]}"
                 for i, _ in dropped]  # fmt: skip
        return [adjacent[i] for i in kept], _Pruned(texts, "prefilter", [sim for _, sim in dropped])

    def _cut(self, texts: list[str]) -> tuple[list[int], _Pruned]:
        """Above ``prefilter_threshold`` with an embedder: the top-N texts by query similarity;
        otherwise the first ``max_options - 1`` (store order). Returns kept indices and the pruned."""
        if self.traverser.prefilter is not None and len(texts) > self.cfg.prefilter_threshold:
            n = min(self.cfg.prefilter_top_n, self.max_shown)
            kept, dropped = self.traverser.prefilter.top_n(self.query, texts, n)
            return kept, _Pruned([texts[i] for i, _ in dropped], "prefilter", [sim for _, sim in dropped])
        n = self.max_shown
        return list(range(min(n, len(texts)))), _Pruned(texts[n:], "truncated" if len(texts) > n else None)

    async def _relation_moves(self, beam: Beam) -> tuple[list[tuple[_Move, Any]], _Pruned, list[str]]:
        groups: dict[tuple[str, str], list[NodeId]] = {}
        # neighbors unsorted: only the previews and the chosen move's (in _apply) are sorted
        for key, targets in (await self._neighbor_groups(beam.frontier, members=False)).items():
            if self.cfg.exclude_visited:
                for node in self.start_set.intersection(targets):
                    targets.remove(node)  # a group holds each neighbor once
            if targets:
                groups[key] = targets
        raw = [_Move(rel, d, reached=targets) for (rel, d), targets in groups.items()]  # type: ignore[arg-type]
        pruned = _Pruned()
        if len(raw) > min(self.cfg.prefilter_threshold, self.max_shown):
            kept, pruned = self._cut([f"{m.relation} ({m.direction})" for m in raw])
            raw = [raw[i] for i in kept]
        k = self.cfg.leads_to_names
        shown_ids = beam.frontier[:3]
        previews = [heapq.nsmallest(k, m.reached or ()) for m in raw]
        wanted = dict.fromkeys([*shown_ids, *(n for ids in previews for n in ids)])
        nodes = await self._remember(list(wanted))

        def name(n: NodeId) -> str:
            return nodes[n].name if n in nodes else n

        glosses = self.cfg.relation_glosses
        keyed = [
            (m, prompts.relation_option(m.relation, m.direction, [name(n) for n in ids],
                                        len(m.reached or ()), glosses=glosses))
            for m, ids in zip(raw, previews, strict=True)
        ]  # fmt: skip
        return keyed, pruned, [name(n) for n in shown_ids]

    # -- decisions -----------------------------------------------------------------------------

    async def _decide(
        self, prepared: list[_Prepared], depth: int
    ) -> tuple[dict[str, dict[str, float]], bool]:
        """Ask every open walk's question; returns (key -> normalized distribution, over the token cap)."""
        questions = [p.question for p in prepared if p.question is not None]
        if not questions:
            return {}, False
        budget = self.cfg.budget
        extra: list[ChoiceQuestion] = []
        if self.ask_answer_type:
            self.ask_answer_type = False
            types = await self.traverser.node_types()
            if 2 <= len(types) <= self.traverser.decider.max_options:  # more: no question can offer them all
                extra = [prompts.answer_type_question(types)]
        state = prompts.build_state(self.query)
        batches = split_batches(state, questions, per_beam=self.cfg.beam_batching == "per_beam")
        if extra:
            batches[0] = [*batches[0], *extra]
        calls_used = self.trace.totals.decision_calls
        if calls_used + len(batches) > budget.max_decision_calls:
            raise _Abort(
                f"max_decision_calls: depth {depth} needs {len(batches)} call(s), "
                f"{calls_used} of {budget.max_decision_calls} used"
            )
        call_ids = [f"c{calls_used + i}" for i in range(len(batches))]
        results = await asyncio.gather(
            *(self.traverser.decider.decide(DecisionRequest(state=state, questions=b)) for b in batches),
            return_exceptions=True,
        )
        dists: dict[str, dict[str, float]] = {}
        failure: BaseException | None = None
        for call_id, batch, response in zip(call_ids, batches, results, strict=True):
            if isinstance(response, BaseException):
                failure = failure or response
                if isinstance(response, DecisionError) and response.usage != Usage():  # a billed reply
                    self._record_call(call_id, batch, DecisionResponse(results={}, usage=response.usage))
                continue
            self._record_call(call_id, batch, response)
            for q in batch:
                result = response.results.get(q.key)
                if result is None:
                    raise DecisionError(f"call {call_id}: no answer for question {q.key!r}")
                dist = normalize_distribution(list(q.options), result.probabilities, key=q.key)
                if q.key == prompts.ANSWER_TYPE_KEY:
                    self.answer_hint = q.options[top_label(dist)]  # type: ignore[assignment]
                    self.trace.answer_type = self.answer_hint
                    continue
                dists[q.key] = dist
                conf = result.confidence
                self._confidence[q.key] = conf if conf is not None else choice_confidence(dist)
                self._call_of[q.key] = call_id
        if failure is not None:
            raise failure
        over = (
            budget.max_input_tokens is not None and self.trace.totals.input_tokens > budget.max_input_tokens
        )
        return dists, over

    def _record_call(self, call_id: str, batch: list[ChoiceQuestion], response: DecisionResponse) -> None:
        if response.model and response.model not in self.trace.model_ids:
            self.trace.model_ids.append(response.model)
        self.trace.add_call(
            Call(
                call_id=call_id,
                n_questions=len(batch),
                latency_s=response.latency_s,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cost_usd=response.usage.cost_usd,
                request_id=response.request_id,
                model=response.model,
            )
        )

    # -- selection -----------------------------------------------------------------------------

    async def _advance(self, prepared: list[_Prepared], dists: dict[str, dict[str, float]]) -> list[Beam]:
        """Apply forced steps and decisions; keep the next pool of walks."""
        alpha, floor = self.cfg.length_alpha, self.cfg.prob_floor
        finished = [b for b in self._pool if b.finished]
        # (score, prepared, label, p) candidates in offer order; materialized only if selected
        candidates: list[tuple[float, _Prepared, str, float]] = []
        carried: list[Beam] = []
        forced: dict[int, Step] = {}  # forced move's child id -> its step (kept only if selected)
        for p in prepared:
            step = p.step
            assert step is not None
            beam = p.beam
            if p.kind == "dead_end":
                step.forced, step.chosen, step.note = True, prompts.STOP, "dead end: forced STOP (p=1)"
                beam.record_decision(1.0, floor, None, forced=True)
                beam.finish("dead_end")
                self._score_step(step, beam, 0.0)
                self.trace.totals.forced_steps += 1
                self.trace.steps.append(step)
                carried.append(beam)
                continue
            if p.kind == "forced_move":
                step.forced, step.chosen, step.note = True, "o1", "forced move (one legal option, no call)"
                child = await self._apply(beam, p.moves["o1"], step)
                self._score_step(step, child, None)
                forced[child.id] = step
                self.trace.totals.forced_steps += 1
                self.trace.steps.append(step)
                carried.append(child)
                continue
            assert p.question is not None
            raw = dists[p.question.key]
            step.distribution, step.call_id = raw, self._call_of.get(p.question.key)
            step.confidence = self._confidence.get(p.question.key)
            self.trace.steps.append(step)
            if self.sampling:
                used = used_distribution(raw, self.cfg.temperature, self.cfg.top_p)
                step.distribution_used = used
                label = draw(used, self.rngs[beam.walk])
                carried.append(await self._take(p, label, raw[label]))
                continue
            step.distribution_used = raw
            for label, prob in raw.items():
                score = normalized_score(
                    beam.sum_logp + step_logp(prob, floor), beam.n_decisions + 1, alpha, floor, 1
                )
                candidates.append((score, p, label, prob))
        if self.sampling:
            return self._keep_forced(finished + carried, forced)
        # finished walks and forced continuations compete with the new candidates for the k slots;
        # the sort is stable, so ties keep pool order, then offer order
        pool_entries: list[tuple[float, Beam | None, _Prepared | None, str, float]] = [
            (b.score(alpha, floor), b, None, "", 0.0) for b in (*finished, *carried)
        ]
        pool_entries += [(s, None, p, label, prob) for s, p, label, prob in candidates]
        pool_entries.sort(key=lambda e: -e[0])
        out: list[Beam] = []
        for _, beam, p, label, prob in pool_entries[: self.cfg.width]:
            out.append(beam if beam is not None else await self._take(p, label, prob))  # type: ignore[arg-type]
        return self._keep_forced(out, forced)

    @staticmethod
    def _keep_forced(pool: list[Beam], forced: dict[int, Step]) -> list[Beam]:
        """``pool``, with the forced moves it kept recorded in their steps."""
        for beam in pool:
            if (step := forced.get(beam.id)) is not None:
                step.kept = {"o1": beam.id}
        return pool

    async def _take(self, p: _Prepared, label: str, prob: float) -> Beam:
        """Materialize one chosen option of a question as a walk (a STOP finishes a copy)."""
        step = p.step
        assert step is not None and p.question is not None
        child = p.beam.child(self._new_id()) if label == prompts.STOP else None
        if child is not None:
            lp = child.record_decision(prob, self.cfg.prob_floor, step.confidence)
            child.finish("stop")
        else:
            child = await self._apply(p.beam, p.moves[label], step)
            lp = child.record_decision(prob, self.cfg.prob_floor, step.confidence)
        step.kept[label] = child.id
        if step.chosen is None:
            step.chosen = label
            self._score_step(step, child, lp)
        return child

    def _score_step(self, step: Step, beam: Beam, lp: float | None) -> None:
        step.step_logp = lp
        step.cum_logp = beam.sum_logp
        step.norm_score = beam.score(self.cfg.length_alpha, self.cfg.prob_floor)

    async def _apply(self, beam: Beam, move: _Move, step: Step) -> Beam:
        """A child walk that took ``move`` from ``beam``'s frontier."""
        child = beam.child(self._new_id())
        if move.target is not None:  # entity mode
            child.hops.append(HopRef(move.relation, move.direction, beam.frontier[0], move.target))
            child.frontier = [move.target]
            child.visited.add(move.target)
            self.reached.add(move.target)
            return child
        assert move.reached is not None
        targets = sorted(move.reached)
        if len(targets) > self.cfg.max_frontier:
            targets = await self._cap_frontier(targets, step)
        child.hops.append(HopRef(move.relation, move.direction))
        child.trail.append(beam.frontier)
        child.frontier = targets
        self.reached.update(targets)
        return child

    async def _cap_frontier(self, targets: list[NodeId], step: Step) -> list[NodeId]:
        """Keep ``max_frontier`` nodes: the most query-similar, or the first ones without an embedder."""
        n = self.cfg.max_frontier
        if self.traverser.prefilter is None:
            step.note = f"frontier truncated from {len(targets)} to {n}"
            return targets[:n]
        kept, _ = split_top(await self.traverser.prefilter.node_similarities(self.query, targets), n)
        step.note = f"frontier capped from {len(targets)} to {n} by query similarity"
        return [targets[i] for i in kept]
