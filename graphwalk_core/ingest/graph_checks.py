"""Integrity checks over the warehouse tables (run by the Dagster asset checks)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from graphwalk_core.warehouse import open_query, query
from graphwalk_core.warehouse.layout import table_names

EXAMPLES = 5


@dataclass(frozen=True)
class CheckOutcome:
    """A check's verdict: how many rows fail it and a few of them."""

    name: str
    failures: int
    examples: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.failures == 0


def _check(root: Path, name: str, sql: str) -> CheckOutcome:
    """The rows of ``sql`` as failures: counted a batch at a time, the first few kept as examples."""
    failures, examples = 0, list[str]()
    with open_query(root, sql) as rows:
        for batch in rows.batches():
            examples += ["|".join(map(str, r)) for r in batch[: EXAMPLES - len(examples)]]
            failures += len(batch)
    return CheckOutcome(name, failures, examples)


def edge_endpoints_exist(root: Path) -> CheckOutcome:
    """Every edge's source and target is a node."""
    return _check(
        root,
        "edge endpoints exist",
        """SELECT e.id, e.source, e.target FROM edges e
           WHERE e.source NOT IN (SELECT id FROM nodes) OR e.target NOT IN (SELECT id FROM nodes)
           ORDER BY e.id""",
    )


def elements_have_provenance(root: Path) -> CheckOutcome:
    """Every node and edge has at least one element-level provenance entry with a source."""
    return _check(
        root,
        "elements have provenance",
        """WITH backed AS (
             SELECT DISTINCT element_kind, element_id FROM provenance
             WHERE scope = 'element' AND source_id IS NOT NULL)
           SELECT kind, id FROM (
             SELECT 'node' AS kind, id FROM nodes UNION ALL SELECT 'edge' AS kind, id FROM edges) AS el
           WHERE NOT EXISTS (SELECT 1 FROM backed b WHERE b.element_kind = el.kind AND b.element_id = el.id)
           ORDER BY kind, id""",
    )


def ledger_has_documents(root: Path) -> CheckOutcome:
    """Every ledger entry of a source whose documents a run listed (the ``documents`` table) names a
    document that source still has (deleted ones leave the ledger). A source no run listed (ingested by
    ``graphwalk ingest``, or an imported graph's) has nothing to compare with; the check
    ledger_sources_declared names it when sources.yaml does not declare it."""
    if "documents" not in table_names(root):
        return CheckOutcome("ledger entries have documents", 0, [])
    return _check(
        root,
        "ledger entries have documents",
        """SELECT l.source, l.document_id FROM ledger l
           WHERE l.source IN (SELECT source FROM documents) AND NOT EXISTS (
             SELECT 1 FROM documents d
             WHERE d.source = l.source AND d.document_id = l.document_id AND d.status <> 'deleted')
           ORDER BY 1, 2""",
    )


def sources_declared(root: Path, declared: Collection[str]) -> CheckOutcome:
    """Every source whose documents the ledger holds is ``declared``: an entry removed from sources.yaml, or
    renamed there, leaves its documents in the graph (nothing is retracted); each other source is named
    with how many documents it holds."""
    rows = query(root, "SELECT source, count(*) FROM ledger GROUP BY source ORDER BY source").rows
    undeclared = [f"{source}: {count} document(s)" for source, count in rows if source not in declared]
    return CheckOutcome("ledger sources are declared", len(undeclared), undeclared[:EXAMPLES])
