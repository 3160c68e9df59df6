"""The ``graphwalk ingest`` command: summary output, reruns, skipped input and clear errors."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from graphwalk_core.cli.ingest import ingest

REPO = Path(__file__).resolve().parents[2]
app = typer.Typer()
app.command()(ingest)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_ingest_files_then_rerun(tmp_path: Path) -> None:
    graph = str(tmp_path / "graph.sqlite")
    films = str(REPO / "data" / "films")
    mapping = str(REPO / "data" / "films_mapping.yaml")
    code, out = invoke(films, "--graph", graph, "--mapping", mapping, "--routing", "exact")
    assert code == 0, out
    assert "new 11, changed 0, retried 0, unchanged 0, deleted 0, failed 0" in out
    assert "│ decision calls    │ 0 (0 in, 0 out tokens), escalations 0, fallbacks 0" in out
    code, out = invoke(films, "--graph", graph, "--mapping", mapping, "--routing", "exact")
    assert code == 0 and "new 0, changed 0, retried 0, unchanged 11, deleted 0, failed 0" in out
    assert "added 0, merged 0, retracted 0, deleted 0" in out


def test_ingest_sql_with_fake_decider(tmp_path: Path) -> None:
    graph = str(tmp_path / "graph.sqlite")
    code, out = invoke(str(REPO / "data" / "sample.sqlite"), "--graph", graph, "--decider", "fake")
    assert code == 0, out
    assert "ingest sample (nlp:2, routing jev with fake:seed=0)" in out  # names the decider that routed
    assert "nodes             │ added 17" in out and "edges             │ added 19" in out


def test_skipped_input_is_listed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ok.txt").write_text("Ada Lovelace met Charles Babbage.", encoding="utf-8")
    (corpus / "rows.jsonl").write_text('{"a": 1}\n{broken\n', encoding="utf-8")
    code, out = invoke(str(corpus), "--graph", str(tmp_path / "g.sqlite"), "--routing", "exact")
    assert code == 0, out
    assert (
        "skipped rows.jsonl:2: invalid JSON: Expecting property name enclosed in double quotes at column 2"
        in out
    )
    assert "new 2," in out


def test_a_skipped_file_is_named_as_it_is_spelled(tmp_path: Path) -> None:
    """File names are printed as text, not rich markup: ``[bold]`` in a name is part of it."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes [bold].txt").write_bytes(b"\x00\x01")
    (corpus / "ok.txt").write_text("Ada Lovelace met Charles Babbage.", encoding="utf-8")
    code, out = invoke(str(corpus), "--graph", str(tmp_path / "g.sqlite"), "--routing", "exact")
    assert code == 0, out
    assert "skipped notes [bold].txt:1: binary file (NUL byte at offset 0)" in out


def test_the_summary_counts_the_documents_skipped_input_kept(tmp_path: Path) -> None:
    corpus, graph = tmp_path / "corpus", str(tmp_path / "g.sqlite")
    corpus.mkdir()
    (corpus / "rows.jsonl").write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    assert invoke(str(corpus), "--graph", graph, "--routing", "exact")[0] == 0
    (corpus / "rows.jsonl").write_text('{"a": 1}\n{broken\n', encoding="utf-8")
    code, out = invoke(str(corpus), "--graph", graph, "--routing", "exact")
    assert code == 0, out
    assert "│ skipped input     │ 1; 1 document kept from earlier runs" in out
    assert "new 0, changed 0, retried 0, unchanged 1, deleted 0, failed 0" in out


def test_errors_are_clear(tmp_path: Path) -> None:
    code, out = invoke(str(tmp_path / "nope"), "--graph", str(tmp_path / "g.sqlite"), "--routing", "exact")
    assert (code, out.strip()) == (2, f"error: source path {tmp_path / 'nope'} does not exist")
    code, out = invoke(
        "postgresql+psycopg2://bob:hunter2@127.0.0.1:1/x", "--graph", str(tmp_path / "g.sqlite")
    )
    assert code == 2 and "hunter2" not in out and "bob:***@127.0.0.1:1/x" in out
    code, out = invoke(
        str(REPO / "data" / "films"), "--graph", str(tmp_path / "kb.txt"), "--routing", "exact"
    )
    assert code == 2 and "cannot ingest into a triples file" in out


def test_llm_extractor_through_the_command(openai_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from graphwalk_core.settings import get_settings

    from .test_llm_extractor import GOOD

    openai_server.script = lambda messages: GOOD
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Inception was directed by Christopher Nolan.", encoding="utf-8")
    env = {
        "GRAPHWALK_LLM_MODEL": "openai/test-model",
        "GRAPHWALK_LLM_API_BASE": openai_server.base_url,
        "GRAPHWALK_LLM_API_KEY": "sk-secret-key",
        "COLUMNS": "200",
    }
    get_settings.cache_clear()
    try:
        runs = []
        for name in ("one.sqlite", "two.sqlite"):
            args = [str(corpus), "--graph", str(tmp_path / name), "--extractor", "llm", "--routing", "exact"]
            runs.append(CliRunner().invoke(app, args, env=env))
    finally:
        get_settings.cache_clear()
    assert [r.exit_code for r in runs] == [0, 0], runs[0].output
    assert "ingest corpus (llm:1:openai/test-model, routing exact)" in runs[0].output
    assert "│ extraction calls  │ 1 (" in runs[0].output
    assert "(cache hits 1)" in runs[1].output and "│ extraction calls  │ 0 (" in runs[1].output
    assert (tmp_path / ".graphwalk" / "extractions.sqlite").is_file()
    assert len(openai_server.chat_requests) == 1
    assert "sk-secret-key" not in runs[0].output


def graph_triples(graph: Path) -> list[tuple[str, str, str]]:
    import asyncio

    from graphwalk_core.stores.base import named_triples
    from graphwalk_core.stores.open import open_store

    async def read() -> list[tuple[str, str, str]]:
        store = open_store(graph)
        try:
            return await named_triples(store)
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_folder_named_like_an_ingested_one_does_not_replace_it(tmp_path: Path) -> None:
    """A source id comes from the path's name, so ``a/notes`` and ``b/notes`` share it: the second is
    refused before anything is read, unless its source id is given."""
    for folder, text in (("a", "Alice Smith works with Bob Jones."), ("b", "Carol White met Dan Brown.")):
        (tmp_path / folder / "notes").mkdir(parents=True)
        (tmp_path / folder / "notes" / f"{folder}.txt").write_text(text, encoding="utf-8")
    graph = tmp_path / "g.sqlite"
    first, second = str(tmp_path / "a" / "notes"), str(tmp_path / "b" / "notes")
    assert invoke(first, "--graph", str(graph), "--routing", "exact")[0] == 0
    before = graph_triples(graph)
    assert [(s, t) for s, _, t in before] == [("Alice Smith", "Bob Jones")]
    code, out = invoke(second, "--graph", str(graph), "--routing", "exact")
    assert (code, " ".join(out.split())) == (
        2,
        f"error: source 'notes' holds documents read from {first}; {second} would replace them (what it "
        "lacks would be retracted). Give it a source id of its own (--source-id NAME), or --source-id "
        "notes to replace them",
    )
    assert graph_triples(graph) == before
    code, out = invoke(second, "--graph", str(graph), "--routing", "exact", "--source-id", "notes_b")
    assert code == 0 and "new 1, changed 0, retried 0, unchanged 0, deleted 0, failed 0" in out
    assert [(s, t) for s, _, t in graph_triples(graph)] == [
        ("Alice Smith", "Bob Jones"),
        ("Carol White", "Dan Brown"),
    ]
    code, out = invoke(second, "--graph", str(graph), "--routing", "exact", "--source-id", "notes")
    assert code == 0 and "new 1, changed 0, retried 0, unchanged 0, deleted 1, failed 0" in out
    assert [(s, t) for s, _, t in graph_triples(graph)] == [("Carol White", "Dan Brown")]
    code, out = invoke(second, "--graph", str(graph), "--routing", "exact")  # its origin now: b/notes
    assert code == 0 and "unchanged 1, deleted 0" in out


def test_an_emptied_database_file_keeps_what_it_gave(tmp_path: Path) -> None:
    """A 0-byte SQLite source (being written, or truncated) is read as nothing, not as no rows."""
    source, graph = tmp_path / "sample.sqlite", tmp_path / "g.sqlite"
    source.write_bytes((REPO / "data" / "sample.sqlite").read_bytes())
    assert invoke(str(source), "--graph", str(graph), "--routing", "exact")[0] == 0
    before = graph_triples(graph)
    assert len(before) == 19
    source.write_bytes(b"")
    code, out = invoke(str(source), "--graph", str(graph), "--routing", "exact")
    assert (code, " ".join(out.split())) == (
        2,
        f"error: SQL source sqlite:///{source} is an empty file (0 bytes): nothing read, and the graph keeps "
        "what the source gave it before",
    )
    assert graph_triples(graph) == before


def assert_refused_as_empty(source: str, graph: str, said: str, held: int) -> None:
    """An ingest of ``source`` ends with the empty-source error: ``said``, and the ``held`` documents."""
    code, out = invoke(source, "--graph", graph, "--routing", "exact")
    assert (code, " ".join(out.split())) == (
        2,
        f"error: {said}, where the graph holds {held} of its documents: nothing is retracted (an unmounted "
        "share or an emptied folder or table?); to retract them all, ingest it with --allow-empty "
        "(sources.yaml: allow_empty: true)",
    )


def test_a_source_that_lists_nothing_retracts_nothing_unless_allowed(tmp_path: Path) -> None:
    """An unmounted share leaves its mount point: an empty folder retracted every document it had given."""
    corpus, graph = tmp_path / "share", str(tmp_path / "g.sqlite")
    corpus.mkdir()
    for name, text in (("a.txt", "Alice knows Bob."), ("b.txt", "Carol met Dave.")):
        (corpus / name).write_text(text, encoding="utf-8")
    assert invoke(str(corpus), "--graph", graph, "--routing", "exact")[0] == 0
    before = graph_triples(Path(graph))
    assert len(before) == 2
    (corpus / "a.txt").unlink()
    (corpus / "b.txt").unlink()
    assert_refused_as_empty(str(corpus), graph, f"source 'share' lists no documents at {corpus}", 2)
    assert graph_triples(Path(graph)) == before
    code, out = invoke(str(corpus), "--graph", graph, "--routing", "exact", "--allow-empty")
    assert code == 0 and "new 0, changed 0, retried 0, unchanged 0, deleted 2, failed 0" in out
    assert graph_triples(Path(graph)) == []


def test_a_database_whose_tables_were_emptied_retracts_nothing_unless_allowed(tmp_path: Path) -> None:
    import sqlite3

    source, graph = tmp_path / "sample.sqlite", str(tmp_path / "g.sqlite")
    source.write_bytes((REPO / "data" / "sample.sqlite").read_bytes())
    assert invoke(str(source), "--graph", graph, "--routing", "exact")[0] == 0
    before = graph_triples(Path(graph))
    with sqlite3.connect(source) as db:
        db.execute("PRAGMA foreign_keys = OFF")
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            db.execute(f'DELETE FROM "{table}"')
    assert_refused_as_empty(
        str(source), graph, f"source 'sample' lists no documents at sqlite:///{source}", 26
    )
    assert graph_triples(Path(graph)) == before


def test_options_the_run_would_not_use_are_refused(tmp_path: Path) -> None:
    """``--decider`` under ``--routing exact`` (no decisions) and ``--cache`` with the nlp extractor (it
    caches nothing) were accepted and silently unused; now each is an error naming the option, before
    any graph is written."""
    films, graph = str(REPO / "data" / "films"), tmp_path / "g.sqlite"
    code, out = invoke(films, "--graph", str(graph), "--routing", "exact", "--decider", "local")
    assert (code, out) == (
        2,
        "error: --decider picks who routes with --routing jev: --routing exact uses none\n",
    )
    cache = str(tmp_path / "cache.sqlite")
    code, out = invoke(films, "--graph", str(graph), "--extractor", "nlp", "--cache", cache)
    assert (code, out) == (
        2,
        "error: --cache holds the llm extractor's answers: the nlp extractor this run uses caches nothing\n",
    )
    assert not graph.exists() and not Path(cache).exists()


def test_an_empty_source_id_is_an_error_not_the_one_from_the_path(tmp_path: Path) -> None:
    """``--source-id ""`` took the id from the path but as one given by hand, so without the check that
    refuses an id another folder recorded (its documents would be retracted for this folder's)."""
    graph = tmp_path / "g.sqlite"
    code, out = invoke(
        str(REPO / "data" / "films"), "--graph", str(graph), "--source-id", "", "--routing", "exact"
    )
    assert (code, out) == (2, "error: invalid source id '': non-blank, no '/' and no outer spaces\n")
    assert not graph.exists()
