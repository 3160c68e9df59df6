"""``graphwalk query``: answers, JSON output, trace file and clear errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.model import Edge, Node
from graphwalk_core.settings import get_settings
from graphwalk_core.stores.memory import MemoryGraphStore

from .conftest import MOVIES

runner = CliRunner()


def test_query_json_relation_mode(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    args = ["query", str(MOVIES), "who directed Avatar", "--start", "Avatar", "--hop-mode", "relation",
            "--decider", "fake", "--json", "--trace", str(trace)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["status"] == "ok"
    assert payload["start"] == ["Avatar"]
    assert payload["decider"] == "fake:seed=0"
    assert json.loads(trace.read_text())["query"] == "who directed Avatar"


def test_query_resolves_the_start_and_prints_witnesses() -> None:
    result = runner.invoke(app, ["query", str(MOVIES), "who directed Memento", "--decider", "fake"])
    assert result.exit_code == 0, result.output
    assert "start=['Memento']" in result.stdout
    assert "1. " in result.stdout and "calls=" in result.stdout


def test_query_says_how_the_start_was_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start found in the question is printed with its tier and score, so a guessed one (an entity not in
    the graph, linked to the nearest embedded name) shows as a guess; --json has the same in the trace.
    A start given with --start prints no such line."""
    monkeypatch.setenv("GRAPHWALK_EMBED_MODEL_PATH", "hashing")  # the same embedder with or without MiniLM
    get_settings.cache_clear()
    base = ["query", str(MOVIES), "who directed Foobarbaz?", "--decider", "fake"]
    try:
        guessed = runner.invoke(app, base, env={"COLUMNS": "200"})
        as_json = runner.invoke(app, [*base, "--json"])
        named = runner.invoke(app, ["query", str(MOVIES), "who directed Memento", "--decider", "fake"])
        given = runner.invoke(app, [*base, "--start", "Memento"])
    finally:
        get_settings.cache_clear()
    assert guessed.exit_code == 0, guessed.output
    assert guessed.stdout.splitlines()[:2] == [
        "status ok  decider=fake:seed=0  start=['Leonardo DiCaprio']",
        "start: Leonardo DiCaprio (nearest name by embedding, similarity 0.11)",
    ]
    links = json.loads(as_json.stdout.strip().splitlines()[-1])["trace"]["links"]
    assert links == [
        {"node_id": "Leonardo DiCaprio", "name": "Leonardo DiCaprio", "how": "embedding", "mention": None,
         "score": pytest.approx(0.113067, abs=1e-6)}
    ]  # fmt: skip
    assert named.stdout.splitlines()[1] == 'start: Memento (named in the question: "memento")'
    assert given.stdout.splitlines()[1].startswith("1. ")


def test_query_errors_are_clear(tmp_path: Path) -> None:
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--start", "Titanc", "--decider", "fake"])
    assert result.exit_code == 2
    assert "start node not in the graph: 'Titanc' (did you mean: Titanic?)" in result.output
    result = runner.invoke(app, ["query", str(tmp_path / "none.txt"), "q"])
    assert (result.exit_code, "graph not found" in result.output) == (2, True)
    result = runner.invoke(app, ["query", str(MOVIES), "  "])
    assert (result.exit_code, "the question is empty" in result.output) == (2, True)
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--strategy", "bfs"])
    assert (result.exit_code, "--strategy must be one of greedy, beam, sample" in result.output) == (2, True)
    # a pydantic validation error with a link, or "invalid graphwalk config override" under a preset
    for extra in ([], ["--preset", "relation-beam"]):
        result = runner.invoke(app, ["query", str(MOVIES), "q", "--beam-width", "0", *extra])
        assert result.exit_code == 2
        assert "Invalid value for '--beam-width': Input should be greater than or equal to 1" in " ".join(
            result.output.split()
        )


def test_query_trace_goes_to_a_new_folder_and_a_bad_target_is_refused_before_the_walk(tmp_path: Path) -> None:
    # a missing folder was a FileNotFoundError traceback after the walk, with no answer printed
    base = ["query", str(MOVIES), "who directed Avatar", "--start", "Avatar", "--decider", "fake", "--trace"]
    trace = tmp_path / "new" / "trace.json"
    result = runner.invoke(app, [*base, str(trace)])
    assert result.exit_code == 0, result.output
    assert json.loads(trace.read_text(encoding="utf-8"))["query"] == "who directed Avatar"
    result = runner.invoke(app, [*base, str(tmp_path)])
    assert (result.exit_code, result.stderr) == (2, f"error: --trace {tmp_path} is a folder, not a file\n")
    under_a_file = trace / "t.json"
    result = runner.invoke(app, [*base, str(under_a_file)])
    assert (result.exit_code, result.stderr) == (2, f"error: --trace {under_a_file}: {trace} is a file\n")


def test_query_trace_never_replaces_the_graph(tmp_path: Path) -> None:
    # --trace naming the graph's own file replaced the graph with the trace
    kb = tmp_path / "kb.txt"
    kb.write_bytes(MOVIES.read_bytes())
    args = ["query", str(kb), "who directed Avatar", "--start", "Avatar", "--decider", "fake", "--trace"]
    result = runner.invoke(app, [*args, str(kb)])
    assert (result.exit_code, result.stderr) == (2, f"error: --trace {kb} would write over the graph {kb}\n")
    assert kb.read_bytes() == MOVIES.read_bytes()
    # nor a table of a Parquet graph folder
    folder = tmp_path / "kb.parquet"
    assert runner.invoke(app, ["graph", "import", str(kb), "--out", str(folder)]).exit_code == 0
    table = sorted(folder.glob("*.parquet"))[0]
    before = table.read_bytes()
    result = runner.invoke(app, ["query", str(folder), *args[2:], str(table)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: --trace {table} would write over the graph {folder}\n",
    )
    assert table.read_bytes() == before


def test_query_trace_never_replaces_a_sqlite_graph_named_by_url(tmp_path: Path) -> None:
    """The check that --trace does not name the graph's own file looked at a path only: a SQLite graph
    named by its URL (sqlite:///kb.db, as GRAPHWALK_GRAPH_URL gives it) was replaced by the trace."""
    kb = tmp_path / "kb.txt"
    kb.write_bytes(MOVIES.read_bytes())
    db = tmp_path / "kb.db"
    assert runner.invoke(app, ["graph", "import", str(kb), "--out", str(db)]).exit_code == 0
    before = db.read_bytes()
    url = f"sqlite:///{db}"
    args = ["query", url, "who directed Avatar", "--start", "Avatar", "--decider", "fake", "--trace", str(db)]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stderr) == (2, f"error: --trace {db} would write over the graph {url}\n")
    assert db.read_bytes() == before


def test_query_walks_with_an_eval_preset_and_metaqa_glosses(metaqa_dir: Path, minilm_dir: Path) -> None:
    """The README's example: the relation-beam eval system's config, MetaQA's relation glosses, the local
    decider (without the glosses, the actors of Inception outrank its director)."""
    args = ["query", str(metaqa_dir / "kb.txt"), "who directed [Inception]?", "--preset", "relation-beam",
            "--glosses", "metaqa", "--decider", "local", "--json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert [answer["names"] for answer in payload["answers"]][:2] == [
        ["Christopher Nolan"],
        ["Ellen Page", "Leonardo DiCaprio", "Tom Hardy"],
    ]
    config = payload["trace"]["config"]
    assert (config["hop_mode"], config["strategy"], config["allow_stop_at_start"]) == (
        "relation",
        "beam",
        False,
    )
    assert len(config["relation_glosses"]) == 9


def test_query_refuses_a_preset_with_its_own_settings() -> None:
    result = runner.invoke(
        app, ["query", str(MOVIES), "q", "--preset", "relation-beam", "--strategy", "greedy"]
    )
    assert (result.exit_code, "--preset sets the strategy and the hop mode" in result.output) == (2, True)
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--preset", "relation-wide"])
    assert (result.exit_code, "--preset must be one of relation-greedy, relation-beam" in result.output) == (
        2,
        True,
    )
    result = runner.invoke(app, ["query", str(MOVIES), "q", "--glosses", "wikidata"])
    assert (result.exit_code, "--glosses must be one of metaqa (got 'wikidata')" in result.output) == (
        2,
        True,
    )


def test_query_prints_brackets_in_names_and_errors_literally(tmp_path: Path) -> None:
    """Graph names and questions are text, not rich markup: ``[/b]`` neither crashes the printout nor
    vanishes, and ``[b]`` in an unknown start node stays in the error."""
    triples = tmp_path / "markup.txt"
    triples.write_text("Film [/b] one|directed_by|Dir [bold]X\n", encoding="utf-8")
    args = ["query", str(triples), "who directed it [/i]", "--start", "Film [/b] one",
            "--preset", "relation-greedy", "--decider", "fake"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "status ok  decider=fake:seed=0  start=['Film [/b] one']",
        "1. Dir [bold]X score=-6.908 votes=1 (dead_end)",
        "     Film [/b] one --directed_by--> Dir [bold]X  e_7f29144114859ab038f3ebff ",
    ]
    assert lines[4] == "who directed it [/i]  start=['Film [/b] one']  models=['fake:seed=0']"
    assert "beam 1 at Dir [bold]X -> STOP (forced)" in lines[9]
    result = runner.invoke(app, ["query", str(triples), "q", "--start", "nope [b]x", "--decider", "fake"])
    assert result.exit_code == 2
    assert "error: start node not in the graph: 'nope [b]x'" in result.output


def test_query_starts_from_a_node_named_by_its_name_or_alias(tmp_path: Path) -> None:
    """An ingested graph's node ids are hashes: ``--start`` takes a node's exact name or alias too (a name
    two nodes share starts from both), and a start that is neither id nor name gets close names."""
    store = MemoryGraphStore()
    nodes = [
        Node(id="n_1", name="Avatar", aliases=("Avatar (2009)",)),
        Node(id="n_2", name="Avatar"),
        Node(id="n_3", name="James Cameron"),
    ]
    edges = [
        Edge(source="n_1", target="n_3", type="directed_by"),
        Edge(source="n_2", target="n_3", type="written_by"),
    ]
    for node in nodes:
        asyncio.run(store.upsert_node(node))
    for edge in edges:
        asyncio.run(store.upsert_edge(edge))
    folder = store.save(tmp_path / "g")
    base = ["query", str(folder), "who directed it", "--decider", "fake", "--json"]
    for start, walked in (("Avatar", ["n_1", "n_2"]), ("Avatar (2009)", ["n_1"]), ("n_2", ["n_2"])):
        result = runner.invoke(app, [*base, "--start", start])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout.strip().splitlines()[-1])["start"] == walked
    result = runner.invoke(app, [*base, "--start", "Avatr"])
    assert result.exit_code == 2
    assert "error: start node not in the graph: 'Avatr' (did you mean: Avatar?)" in result.output


def test_query_prints_nodes_by_name_where_ids_are_hashes(tmp_path: Path) -> None:
    """The printout names the start and witness nodes (an ingested graph's ids are hashes); --json keeps
    the ids."""
    store = MemoryGraphStore()
    for node in (Node(id="n_1", name="Avatar"), Node(id="n_3", name="James Cameron")):
        asyncio.run(store.upsert_node(node))
    asyncio.run(store.upsert_edge(Edge(source="n_1", target="n_3", type="directed_by")))
    folder = store.save(tmp_path / "g")
    args = ["query", str(folder), "who directed Avatar", "--preset", "relation-greedy", "--decider", "fake"]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:2] == ["status ok  decider=fake:seed=0  start=['Avatar']",
                         'start: Avatar (named in the question: "avatar")']  # fmt: skip
    assert lines[3] == "     Avatar --directed_by--> James Cameron  e_e82ca343fe3118f5215f1d70 []"
    assert lines[4] == "who directed Avatar  start=['Avatar']  models=['fake:seed=0']"
    result = runner.invoke(app, [*args, "--json"])
    assert json.loads(result.stdout.strip().splitlines()[-1])["start"] == ["n_1"]


def test_query_loads_no_eval_package_without_a_preset_or_glosses() -> None:
    """A plain query imports no ``graphwalk_core.eval`` (~0.7 s of a cold command)."""
    program = f"""
import sys
from typer.testing import CliRunner
from graphwalk_core.cli import app
result = CliRunner().invoke(app, ["query", {str(MOVIES)!r}, "who directed Memento", "--decider", "fake"])
print(result.exit_code, sorted(m for m in sys.modules if m.startswith("graphwalk_core.eval")))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.stdout == "0 []\n", done.stderr


def test_a_trace_write_cut_short_leaves_the_earlier_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--trace`` wrote the file in place: a query killed while writing it left a truncated JSON file in
    the traces folder, which ``graphwalk train --traces`` then refused ("not a walk trace") until removed,
    and a training reading the folder meanwhile read part of one. It is now written beside and renamed."""
    trace = tmp_path / "traces" / "q1.json"
    trace.parent.mkdir()
    trace.write_text('{"earlier": true}', encoding="utf-8")
    writing = Path.write_text

    def killed(self: Path, data: str, *args: object, **kwargs: object) -> int:
        writing(self, data[:20], encoding="utf-8")  # part written, then the process is killed
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", killed)
    args = ["query", str(MOVIES), "who directed Avatar", "--start", "Avatar", "--decider", "fake",
            "--trace", str(trace)]  # fmt: skip
    result = runner.invoke(app, args)
    monkeypatch.undo()
    assert result.exit_code == 130  # as after Ctrl-C
    assert [p.name for p in trace.parent.iterdir()] == ["q1.json"]
    assert trace.read_text(encoding="utf-8") == '{"earlier": true}'


def test_query_refuses_a_decider_model_its_decider_does_not_read(tmp_path: Path) -> None:
    """``--decider-model`` without ``--decider trained`` walked with the local decider, the model
    silently unused; now it is the error ``graphwalk eval`` gives."""
    model = tmp_path / "model"
    model.mkdir()
    for extra in ([], ["--decider", "fake"]):
        result = runner.invoke(
            app, ["query", str(MOVIES), "who directed Memento", "--decider-model", str(model), *extra]
        )
        chosen = extra[-1] if extra else get_settings().resolved_decider()
        assert (result.exit_code, " ".join(result.output.split())) == (
            2,
            "error: --decider-model is read by the trained decider only: add --decider trained (the decider "
            f"would be {chosen})",
        )
    result = runner.invoke(
        app, ["query", str(MOVIES), "q", "--decider", "trained", "--decider-model", str(tmp_path / "no")]
    )
    assert (result.exit_code, result.output) == (
        2,
        f"error: --decider-model {tmp_path / 'no'}: no such folder\n",
    )


def test_query_refuses_a_beam_width_its_walk_does_not_use() -> None:
    """``--beam-width`` on a greedy walk (the default strategy, or a -greedy preset) was silently unused."""
    outputs = []
    for extra in ([], ["--strategy", "sample"], ["--preset", "relation-greedy"]):
        result = runner.invoke(
            app, ["query", str(MOVIES), "who directed Memento", "--beam-width", "5", *extra]
        )
        outputs.append((result.exit_code, result.output))
    assert outputs == [
        (
            2,
            f"error: --beam-width sets a beam walk's width: this walk is {strategy} (--strategy beam, or a "
            "-beam --preset)\n",
        )
        for strategy in ("greedy", "sample", "greedy")
    ]
    args = ["--beam-width", "2", "--strategy", "beam", "--decider", "fake", "--json"]
    result = runner.invoke(app, ["query", str(MOVIES), "who directed Memento", *args])
    assert result.exit_code == 0, result.output


def test_query_on_an_empty_graph_says_so(tmp_path: Path) -> None:
    """An empty graph answered "no graph node is named in the question: pass --start NODE_ID", sending the
    user after a start node the graph cannot hold."""
    empty = tmp_path / "kb.txt"
    empty.write_text("", encoding="utf-8")
    result = runner.invoke(app, ["query", str(empty), "who directed Memento", "--decider", "fake"])
    assert (result.exit_code, " ".join(result.output.split())) == (
        2,
        f"error: the graph {empty} holds no nodes: import or ingest into it first",
    )
