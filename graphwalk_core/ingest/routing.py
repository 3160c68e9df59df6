"""Routing: each extracted mention goes to an existing node or a NEW one.

Per chunk, in order: candidates come from the :class:`CandidateIndex` (the graph at the start of the run
plus every node planned earlier in the run) and from earlier mentions of the same chunk (name-word
Jaccard), so two differently named mentions of one entity in one chunk can merge. One decision request
per chunk asks one :class:`ChoiceQuestion` per mention with candidates, over ``c1..cN`` and ``NEW``;
mentions without candidates are NEW with no call, years route by exact name. Below ``route_threshold``
an LLM (when configured) adjudicates. If the decider fails, a mention merges only on an exact name and its
document is left incomplete (routed again by the next run); if it refuses the key (HTTP 401, 402, 403),
routing stops with its error.
``routing="exact"`` merges on identical normalized names with no calls (the baseline).

Decider routing drops a fuzzy candidate (or peer) whose names cannot name the mention's entity
(:func:`~graphwalk_core.ingest.name_compat.names_compatible` against the node's name and every alias):
routing behaviour ``jev:2`` and later (``ROUTING_VERSIONS``), recorded in the ledger beside the extractor.
"""

from __future__ import annotations

import copy
import json
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel

from graphwalk_core.aio import gather_or_cancel
from graphwalk_core.decisions.base import ChoiceQuestion, DecisionBackend, DecisionError, DecisionRequest
from graphwalk_core.embeddings.base import Embedder
from graphwalk_core.embeddings.pool import VectorPool
from graphwalk_core.errors import BackendError, ConfigError
from graphwalk_core.ingest.candidates import Candidate, CandidateIndex, IndexEntry, first_spellings
from graphwalk_core.ingest.extraction.base import ExtractedEntity, Extraction
from graphwalk_core.ingest.ledger import provenance_source
from graphwalk_core.ingest.name_compat import is_short_form, names_compatible
from graphwalk_core.ingest.outputs import (
    ChunkExtraction,
    Cost,
    DocumentPlan,
    ExtractionSet,
    MentionDecision,
    RoutingMode,
    RoutingPlan,
)
from graphwalk_core.ingest.resolution import (
    chunk_edges,
    fold_by_id,
    is_pinned,
    mention_node,
    mention_provenance,
    new_node_id,
)
from graphwalk_core.ingest.text import jaccard, name_words
from graphwalk_core.llm.base import LLMBackend, Message
from graphwalk_core.model import GENERIC_TYPE, Edge, Node
from graphwalk_core.model.merge import merge_edge_data, merge_node_data, source_ids
from graphwalk_core.stores.base import GraphStore, first_adjacent

log = logging.getLogger(__name__)

DEFAULT_ROUTE_THRESHOLD = 0.6
#: The routing behaviour of each mode; a new version re-routes a document, as a new extractor version
#: re-extracts it. jev:2 vetoes fuzzy candidates with incompatible names (jev:1 asked about every one);
#: exact:2 and jev:3 merge a mention no question is asked about into a node of its name an earlier
#: mention of the chunk made (a repeated year, a pinned node's name): the earlier versions gave it its own.
#: jev:4 shows a node's links on its card in the order walks read them (``stores.base.adjacency_order``):
#: a card listed incoming links by neighbor first, so a node with many showed other links to the decider.
ROUTING_VERSIONS: dict[str, str] = {"exact": "exact:2", "jev": "jev:4"}
NEW = "NEW"
#: Card and state keys the local decider skips (see :func:`routing_decider`).
LOCAL_SKIP_KEYS = frozenset({"passage", "description", "summary", "relations", "note", "type", "aliases"})
#: Mention names are embedded ahead of routing in batches of this many chunks.
PREFETCH_CHUNKS = 256
#: Types whose identity is their text: routed by exact name, never asked.
LITERAL_TYPES = frozenset({"year", "date", "number"})
ROUTE_TASK = (
    "Does the mention (in the passage) denote one of the candidate entities? "
    "Choose that candidate, or NEW if it is a different entity."
)
ESCALATION_PROMPT = (
    "You resolve entity mentions. Given a passage, a mention and candidate entities, reply with a JSON "
    'object {"choice": LABEL} where LABEL is the candidate that denotes the same entity, or "NEW".'
)


class RouteChoice(BaseModel):
    choice: str


@dataclass
class _Mention:
    entity: ExtractedEntity
    candidates: list[Candidate] = field(default_factory=list)
    peers: list[int] = field(default_factory=list)  # earlier mentions of the same chunk
    target: str | None = None
    action: str = "new"
    via: str = "none"
    probability: float = 1.0


def routing_decider(
    decider: DecisionBackend | None, pool: VectorPool | None = None
) -> DecisionBackend | None:
    """The decider as routing uses it. The local (embedding) decider compares the mention's name with each
    card's name: passage, sentences, types, aliases, summaries and relations are skipped (long texts would
    swamp the names and cost an embedding per question). With the candidate index's ``pool`` of the same
    embedder, it reads its vectors there and keeps no cache of its own: bare names are the index's own
    texts, so one vector per name is held. Jev reads everything."""
    from graphwalk_core.decisions.local import LocalDecisionBackend

    if not isinstance(decider, LocalDecisionBackend):
        return decider
    clone = decider
    if "passage" not in decider.skip_keys:
        clone = copy.copy(decider)
        clone.skip_keys = frozenset(decider.skip_keys | LOCAL_SKIP_KEYS)
    if pool is not None and clone.embedder is pool.embedder:
        clone = clone if clone is not decider else copy.copy(decider)
        clone.embedder, clone.cache = pool, None
    return clone


def reads_card_key(decider: DecisionBackend | None, key: str) -> bool:
    """Whether the decider reads ``key`` of a card: the local decider as routing uses it skips relations
    and summaries, so routing need not read any node's neighbours from the store, nor keep summaries."""
    from graphwalk_core.decisions.local import LocalDecisionBackend

    return not (isinstance(decider, LocalDecisionBackend) and key in decider.skip_keys)


class Router:
    """Routes chunk after chunk against one growing index (strictly sequential, so order is the plan)."""

    def __init__(
        self,
        store: GraphStore,
        decider: DecisionBackend | None,
        embedder: Embedder | None,
        llm: LLMBackend | None,
        routing: RoutingMode,
        *,
        route_threshold: float = DEFAULT_ROUTE_THRESHOLD,
        index: CandidateIndex | None = None,
        card_relations: int = 8,
    ) -> None:
        if routing == "jev" and decider is None:
            raise ConfigError(
                "routing='jev' needs a decider (jev, local or fake); use routing='exact' for none"
            )
        self.store = store
        self.llm = llm
        self.routing = routing
        self.route_threshold = route_threshold
        self.index = index or CandidateIndex(embedder if routing == "jev" else None)
        self.decider = routing_decider(decider, self.index.pool)
        self.card_relations = card_relations if reads_card_key(self.decider, "relations") else 0
        #: whether the index keeps node summaries (for the cards of a decider that reads them)
        self.summaries = reads_card_key(self.decider, "summary")
        self.version = ROUTING_VERSIONS[routing]
        self.cost = Cost()
        self.escalations = 0
        self.fallbacks = 0
        self._cards: dict[str, dict[str, object]] = {}
        self._loaded = False
        self._ahead: ThreadPoolExecutor | None = None
        self._ahead_jobs: list[Future[list[int]]] = []
        #: routed nodes a pinned node took over since the last reload or refresh (gone once applied)
        self._absorbed: set[str] = set()

    async def reload(self, exclude_sources: set[str]) -> None:
        """Start over from the store: an empty index (same settings) filled by :meth:`load_graph`.

        The index is then a function of the stored graph alone, which is what makes a window routed
        after a crash route exactly as it would have without one. :meth:`refresh` reaches the same
        index by touching only what changed."""
        old = self.index
        self.index = CandidateIndex(
            old.embedder,
            cosine_threshold=old.cosine_threshold,
            jaccard_threshold=old.jaccard_threshold,
            max_candidates=old.max_candidates,
            max_word_df=old.max_word_df,
            pool=old.pool,
        )
        self._cards, self._absorbed = {}, set()
        await self.load_graph(exclude_sources)

    async def refresh(self, exclude_sources: set[str], written: set[str]) -> None:
        """The index :meth:`reload` would build, from the previous window's index: only the nodes routing
        planned (``index.dirty``) and the nodes the store ``written`` since (written, re-keyed or deleted
        by applying the plan) are read back from the store.

        With documents pending retraction (``exclude_sources``), or before any load, it is a full
        :meth:`reload`; so is a refresh whose node count disagrees with the store's (a safety net: an
        untracked write must not go unnoticed)."""
        if exclude_sources or not self._loaded:
            await self.reload(exclude_sources)
            return
        ids = sorted(self.index.dirty | written)
        stored = await self.store.get_nodes(ids)
        self.index.sync(
            {node_id: self._entry(stored[node_id]) if node_id in stored else None for node_id in ids}
        )
        self._cards, self._absorbed = {}, set()
        nodes, _ = await self.store.counts()
        if nodes != len(self.index):
            log.warning(
                "candidate index out of step with the store (%d != %d nodes): reloading",
                len(self.index),
                nodes,
            )
            await self.reload(exclude_sources)

    async def load_graph(self, exclude_sources: set[str]) -> None:
        """Index every stored node except those backed only by documents this run retracts."""
        async for node in self.store.iter_nodes():
            if exclude_sources and source_ids(node) <= exclude_sources:
                continue
            self.index.add(self._entry(node))
        self.index.dirty = set()
        self._loaded = True

    def _entry(self, node: Node) -> IndexEntry:
        """What routing indexes of a stored node (its summary only for a decider that reads it)."""
        return IndexEntry(
            id=node.id,
            name=node.name,
            type=node.type,
            aliases=tuple(node.aliases),
            summary=node.summary if self.summaries else None,
            stored=True,
        )

    def _summary(self, entity: ExtractedEntity) -> str | None:
        return entity.description if self.summaries else None

    async def _card(self, node_id: str) -> dict[str, object]:
        """An option card: name, type, aliases, summary and a few relations."""
        if node_id in self._cards:
            return self._cards[node_id]
        entry = self.index.entries[node_id]
        relations = list(entry.relations[: self.card_relations])
        if entry.stored and len(relations) < self.card_relations:
            adjacent = await first_adjacent(self.store, node_id, self.card_relations - len(relations))
            names = await self.store.get_nodes([a.neighbor for a in adjacent])
            for a in adjacent:
                other = names[a.neighbor].name if a.neighbor in names else a.neighbor
                relations.append(
                    f"{a.relation} -> {other}" if a.direction == "out" else f"{other} -> {a.relation}"
                )
        card: dict[str, object] = {"name": entry.name, "type": entry.type}
        if entry.aliases:
            card["aliases"] = entry.aliases[:5]
        if entry.summary:
            card["summary"] = entry.summary
        if relations:
            card["relations"] = relations
        self._cards[node_id] = card
        return card

    def _candidates(self, mentions: list[_Mention]) -> None:
        fuzzy = self.routing == "jev"
        routable = [i for i, m in enumerate(mentions) if m.entity.node_id is None]
        literal = [i for i in routable if mentions[i].entity.type in LITERAL_TYPES]
        named = [i for i in routable if mentions[i].entity.type not in LITERAL_TYPES]
        for i in literal:
            exact = self.index.exact(mentions[i].entity.name)[:1]
            mentions[i].candidates = [Candidate(nid, 1.0, "exact") for nid in exact]
        names = [mentions[i].entity.name for i in named]
        for i, found in zip(named, self.index.candidates(names, fuzzy=fuzzy), strict=True):
            mention = mentions[i]
            mention.candidates = found
            if fuzzy:
                name = mention.entity.name
                mention.candidates = [
                    c for c in found if c.how == "exact" or self._plausible(name, c.node_id)
                ]
                words = name_words(name)
                mention.peers = [
                    j
                    for j in named
                    if j < i
                    and jaccard(words, name_words(mentions[j].entity.name)) >= self.index.jaccard_threshold
                    and names_compatible(name, mentions[j].entity.name, self.index.word_df)
                ]

    def _plausible(self, name: str, node_id: str) -> bool:
        """The mention's name is compatible with the node's name and with every alias it has taken that
        says more than the name (short forms of the name, "Paris" and "Hilton" of "Paris Hilton", may
        well conflict with each other)."""
        entry = self.index.entries[node_id]
        others = [a for a in entry.aliases if not is_short_form(a, entry.name)]
        return all(names_compatible(name, other, self.index.word_df) for other in (entry.name, *others))

    def _compatible(self, node_id: str, entity: ExtractedEntity) -> bool:
        node_type = self.index.entries[node_id].type
        return GENERIC_TYPE in (node_type, entity.type) or node_type == entity.type

    def _unique_exact(self, mention: _Mention) -> bool:
        """The mention's only candidate has its exact name and a compatible type, and no peer competes."""
        cands = mention.candidates
        return (
            len(cands) == 1
            and not mention.peers
            and cands[0].how == "exact"
            and self._compatible(cands[0].node_id, mention.entity)
        )

    def _absorbable(self, entity: ExtractedEntity) -> str | None:
        """The routed node a pinned mention's node, new to the graph, takes over: the one a mention of its
        name would merge into had the pinned node come first (exact name or alias; a compatible type, or
        any type under exact routing, as :meth:`_exact_choice` merges). So a row ingested after a text
        naming its entity gives the graph a row ingested before it gives; pinned nodes never absorb each
        other (two rows are two entities)."""
        routed = [
            node_id
            for node_id in self.index.exact(entity.name)
            if not is_pinned(node_id) and node_id not in self._absorbed
        ]
        compatible = [node_id for node_id in routed if self._compatible(node_id, entity)]
        if self.routing == "exact":
            compatible = compatible or routed
        return compatible[0] if compatible else None

    def _exact_choice(self, mention: _Mention) -> str | None:
        exact = [c.node_id for c in mention.candidates if c.how == "exact"]
        if not exact:
            return None
        same_type = [nid for nid in exact if self._compatible(nid, mention.entity)]
        return (same_type or exact)[0]

    async def _questions(
        self, mentions: list[_Mention]
    ) -> tuple[list[ChoiceQuestion], dict[str, dict[str, str | int]]]:
        """One question per mention with candidates; labels map to node ids (str) or peer indexes (int)."""
        questions: list[ChoiceQuestion] = []
        labels: dict[str, dict[str, str | int]] = {}
        for i, mention in enumerate(mentions):
            if mention.entity.node_id is not None or mention.entity.type in LITERAL_TYPES:
                continue
            if not mention.candidates and not mention.peers:
                continue
            if self._unique_exact(mention):
                continue  # one same-named, type-compatible candidate and no alternative: merged, no call
            options: dict[str, object] = {}
            mapping: dict[str, str | int] = {}
            for n, cand in enumerate(mention.candidates, start=1):
                options[f"c{n}"] = await self._card(cand.node_id)
                mapping[f"c{n}"] = cand.node_id
            for j in mention.peers:
                label = f"c{len(mapping) + 1}"
                peer = mentions[j].entity
                options[label] = {
                    "name": peer.name,
                    "type": peer.type,
                    "summary": peer.description,
                    "note": "named earlier in this passage",
                }
                mapping[label] = j
            options[NEW] = "a new entity, none of the above"
            key = f"m{i}"
            mention_card = {"name": mention.entity.name, "type": mention.entity.type}
            if mention.entity.description:
                mention_card["description"] = mention.entity.description
            questions.append(
                ChoiceQuestion(
                    key=key, instructions={"task": ROUTE_TASK, "mention": mention_card}, options=options
                )
            )
            labels[key] = mapping
        return questions, labels

    async def _escalate(self, passage: str, question: ChoiceQuestion) -> str | None:
        assert self.llm is not None
        content = json.dumps(
            {"passage": passage, "question": question.instructions, "options": question.options}, default=str
        )
        try:
            result = await self.llm.complete(
                [Message(role="system", content=ESCALATION_PROMPT), Message(role="user", content=content)],
                schema=RouteChoice,
            )
        except BackendError as exc:
            log.warning("routing escalation failed for %s: %s", question.key, exc)
            self.cost.add_failed(exc)
            return None
        self.cost.add(result.usage, calls=result.attempts)
        choice = result.parsed.choice if result.parsed is not None else None
        return choice if choice in question.options else None

    async def _decide(self, passage: str, mentions: list[_Mention]) -> None:
        """Set ``via``/``probability`` and a provisional choice (stored in ``target`` as a label)."""
        questions, labels = await self._questions(mentions)
        if not questions:
            return
        assert self.decider is not None
        chosen: dict[str, tuple[str, float, str]] = {}
        try:
            request = DecisionRequest(state={"passage": passage}, questions=questions)
            response = await self.decider.decide(request)
            self.cost.add(response.usage)
            for q in questions:
                result = response.results[q.key]
                chosen[q.key] = (result.top, result.probabilities[result.top], "decider")
        except DecisionError as exc:
            if exc.refused:  # a wrong key would route the whole source on exact names, ledgered complete
                raise
            log.warning("routing decision failed (%s): merging on exact names only", exc)
            self.cost.add(exc.usage)  # a reply that broke the contract was billed all the same
            self.fallbacks += len(questions)
            for q in questions:
                chosen[q.key] = (NEW, 1.0, "fallback")
        if self.llm is not None:
            low = [
                q
                for q in questions
                if chosen[q.key][2] == "decider" and chosen[q.key][1] < self.route_threshold
            ]
            picks = await gather_or_cancel(*(self._escalate(passage, q) for q in low))
            for q, pick in zip(low, picks, strict=True):
                self.escalations += 1
                if pick is not None:
                    result = response.results[q.key]
                    chosen[q.key] = (pick, result.probabilities[pick], "llm")
        for key, (label, p, via) in chosen.items():
            mention = mentions[int(key[1:])]
            mention.via, mention.probability = via, p
            if via == "fallback":
                mention.target = self._exact_choice(mention)
                mention.action = "merge" if mention.target else "new"
                continue
            picked = labels[key].get(label)
            if isinstance(picked, int):
                mention.action, mention.target = "peer", str(picked)
            elif picked is not None:
                mention.action, mention.target = "merge", picked
            else:
                mention.action, mention.target = "new", None

    def _unseen_names(self, items: list[ChunkExtraction]) -> list[str]:
        """The mention names of ``items`` routing will embed: not pinned, not literal, no exact match."""
        if self.routing != "jev" or self.index.embedder is None:
            return []
        return [
            e.name
            for item in items
            if item.extraction is not None
            for e in item.extraction.entities
            if e.node_id is None and e.type not in LITERAL_TYPES and not self.index.exact(e.name)
        ]

    def prefetch(self, items: list[ChunkExtraction]) -> None:
        """Embed the unseen mention names of many chunks in one batch, ahead of routing them.

        One large batch lets the embedder group names of equal token count (no padding). Names that
        :meth:`look_ahead` embedded already come from the pool (or are waited for).
        """
        names = self._unseen_names(items)
        if names:
            self.index.embed(names)
            self.index.prefilter(names)

    @property
    def embeds_ahead(self) -> bool:
        """Whether :meth:`look_ahead` has anything to do (decider routing with an embedder)."""
        return self.routing == "jev" and self.index.pool is not None

    def look_ahead(self, items: list[ChunkExtraction]) -> None:
        """Embed the names of a later window's chunks on a worker thread, while this thread routes and
        applies the current window: ONNX Runtime computes without the GIL, so on two cores the embedding
        costs almost no wall time. Only the pool is written (a vector does not depend on when or with
        what it was embedded); the index and every decision stay this thread's."""
        pool = self.index.pool
        if pool is None:
            return
        names = [n for n in first_spellings(self._unseen_names(items)).values() if n not in pool]
        if not names:
            return
        if self._ahead is None:
            self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphwalk-embed-ahead")
        # jobs done without error go (their row lists would pile up over a corpus); failures stay for close()
        jobs = [job for job in self._ahead_jobs if not job.done() or job.exception() is not None]
        self._ahead_jobs = [*jobs, self._ahead.submit(pool.rows, names)]

    def close(self) -> None:
        """Wait for the look-ahead thread to finish and stop it. A failed look-ahead is only logged: routing
        embedded those names itself (and failed there if it had to)."""
        if self._ahead is None:
            return
        self._ahead.shutdown(wait=True)
        for job in self._ahead_jobs:
            if job.exception() is not None:
                log.warning("embedding names ahead failed (routing embedded them): %s", job.exception())
        self._ahead, self._ahead_jobs = None, []

    async def route_chunk(
        self, item: ChunkExtraction, source_id: str
    ) -> tuple[list[MentionDecision], list[Node], list[Edge]]:
        """Route one chunk's mentions, update the index, and return decisions and incoming elements."""
        assert item.extraction is not None
        chunk = item.chunk
        extraction: Extraction = item.extraction
        mentions = [_Mention(entity=e) for e in extraction.entities]
        self._candidates(mentions)
        if self.routing == "jev":
            await self._decide(chunk.text, mentions)
        doc_source = provenance_source(source_id, chunk.document_id)
        resolved: list[str] = []
        decisions: list[MentionDecision] = []
        nodes: list[Node] = []
        for i, mention in enumerate(mentions):
            entity = mention.entity
            absorbed = None
            if entity.node_id is not None:
                target, action, via = entity.node_id, "pinned", "pinned"
                if target not in self.index:
                    absorbed = self._absorbable(entity)
                self.index.add(
                    IndexEntry(id=target, name=entity.name, type=entity.type, summary=self._summary(entity))
                )
                if absorbed is not None:
                    self._absorbed.add(absorbed)
                    old = self.index.entries[absorbed]
                    for name in (old.name, *old.aliases):
                        self.index.add_name(target, name)
            else:
                if mention.via == "none":  # no question was asked
                    if not mention.candidates:  # a node an earlier mention of this chunk made has its name
                        mention.candidates = [
                            Candidate(n, 1.0, "exact") for n in self.index.exact(entity.name)
                        ]
                    mention.target = self._exact_choice(mention)
                    mention.action = "merge" if mention.target else "new"
                    mention.via = "exact" if mention.target else "none"
                if mention.action == "peer":
                    mention.target, mention.action = resolved[int(mention.target or 0)], "merge"
                if mention.action == "merge" and mention.target is not None:
                    target = mention.target
                    self.index.add_name(target, entity.name)
                else:
                    salt = f"{doc_source}@{chunk.index}#{i}"
                    target = new_node_id(entity.name, entity.type, salt, lambda nid: nid in self.index)
                    entry = IndexEntry(
                        id=target, name=entity.name, type=entity.type, summary=self._summary(entity)
                    )
                    self.index.add(entry, embed=entity.type not in LITERAL_TYPES)
                    mention.action = "new"
                action, via = mention.action, mention.via
            resolved.append(target)
            provenance = mention_provenance(chunk, doc_source, item.extractor, mention.probability)
            nodes.append(mention_node(target, entity, provenance))
            decisions.append(
                MentionDecision(
                    chunk_id=chunk.id,
                    name=entity.name,
                    type=entity.type,
                    node_id=target,
                    action=action,
                    via=via,
                    probability=mention.probability,
                    candidates=[c.node_id for c in mention.candidates],
                    absorbed=absorbed,
                )
            )
        entities = [m.entity for m in mentions]
        edges = chunk_edges(extraction.relations, entities, resolved, nodes)
        entries = self.index.entries
        for edge in edges:
            if self.card_relations:
                self.index.add_relation(edge.source, f"{edge.type} -> {entries[edge.target].name}")
                self.index.add_relation(edge.target, f"{entries[edge.source].name} -> {edge.type}")
            self._cards.pop(edge.source, None)
            self._cards.pop(edge.target, None)
        for target in resolved:
            self._cards.pop(target, None)
        return decisions, nodes, edges


async def route_extractions(
    extractions: ExtractionSet,
    store: GraphStore,
    decider: DecisionBackend | None,
    embedder: Embedder | None,
    llm: LLMBackend | None,
    routing: RoutingMode = "jev",
    *,
    route_threshold: float = DEFAULT_ROUTE_THRESHOLD,
    router: Router | None = None,
    plan: RoutingPlan | None = None,
) -> RoutingPlan:
    """Route every chunk (in order) and collect one :class:`DocumentPlan` per document to process.

    ``plan``: the plan of the earlier chunks of the same documents, routed by the same ``router``: this
    call extends its document plans and decisions, so chunks routed in several calls are planned as in
    one (a long document routed in parts)."""
    source_id = extractions.source_id
    if router is None:
        router = Router(store, decider, embedder, llm, routing, route_threshold=route_threshold)
        await router.load_graph({provenance_source(source_id, d) for d in extractions.retracting})
    plans = (
        {doc.document_id: doc for doc in plan.documents}
        if plan is not None
        else {
            ref.id: DocumentPlan(
                document_id=ref.id,
                content_hash=ref.content_hash,
                extractor=ref.extractor,
                routing=router.version,
            )
            for ref in extractions.documents
        }
    )
    mentions: list[MentionDecision] = plan.mentions if plan is not None else []
    # a document's elements folded by id as they are routed (as apply_plan folds them, in the same order),
    # so a plan holds one element per id, not one per mention
    folded: dict[str, tuple[dict[str, Node], dict[str, Edge]]] = {}
    for n, item in enumerate(extractions.items):
        if n % PREFETCH_CHUNKS == 0:
            router.prefetch(extractions.items[n : n + PREFETCH_CHUNKS])
        doc = plans[item.chunk.document_id]
        if item.extraction is None:
            doc.status = "incomplete"
            doc.failed_chunks += 1
            doc.errors.append(f"chunk {item.chunk.index} ({item.chunk.start}-{item.chunk.end}): {item.error}")
            continue
        decisions, nodes, edges = await router.route_chunk(item, source_id)
        fell_back = sum(d.via == "fallback" for d in decisions)
        if fell_back:  # written as routed on exact names, and routed again by the next run
            doc.status = "incomplete"
            doc.errors.append(
                f"chunk {item.chunk.index} ({item.chunk.start}-{item.chunk.end}): the routing decision "
                f"failed, {fell_back} mention(s) merged on exact names only"
            )
        mentions.extend(decisions)
        doc.absorbed.update((d.absorbed, d.node_id) for d in decisions if d.absorbed is not None)
        if doc.document_id not in folded:
            folded[doc.document_id] = ({n.id: n for n in doc.nodes}, {e.id: e for e in doc.edges})
        doc_nodes, doc_edges = folded[doc.document_id]
        fold_by_id(doc_nodes, nodes, merge_node_data)
        fold_by_id(doc_edges, edges, merge_edge_data)
    for doc_id, (doc_nodes, doc_edges) in folded.items():
        plans[doc_id].nodes, plans[doc_id].edges = list(doc_nodes.values()), list(doc_edges.values())
    return RoutingPlan(
        source_id=source_id,
        routing=routing,
        documents=list(plans.values()),
        mentions=mentions,
        cost=router.cost,
        escalations=router.escalations,
        fallbacks=router.fallbacks,
    )
