"""``graphwalk train decider`` end to end: labeled questions over a triples file, then query with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.decisions.trained import DeciderModel, question_key

from .kb import TRIPLES, questions

runner = CliRunner()


def train_args(graph: Path, questions: Path, out: Path, *more: str) -> list[str]:
    """``graphwalk train decider --graph GRAPH --questions QUESTIONS --out OUT [MORE] --quiet``."""
    return ["train", "decider", "--graph", str(graph), "--questions", str(questions), "--out", str(out),
            *more, "--quiet"]  # fmt: skip


@pytest.fixture
def files(tmp_path: Path, minilm_dir: Path) -> tuple[Path, Path]:
    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in TRIPLES), encoding="utf-8")
    qs = tmp_path / "questions.jsonl"
    rows = [
        {"id": q.id, "question": q.text, "answers": q.gold, "start": q.start[0]} for q in questions(range(9))
    ]
    qs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return kb, qs


def test_train_then_query(files: tuple[Path, Path], tmp_path: Path) -> None:
    kb, qs = files
    out = tmp_path / "model"
    examples = tmp_path / "decision_examples.parquet"
    args = ["train", "decider", "--graph", str(kb), "--questions", str(qs), "--out", str(out),
            "--examples-out", str(examples), "--max-iter", "200", "--quiet"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "examples: examples=63, train=" in result.stdout
    assert "questions without a path to a gold answer: 0" in result.stdout
    assert "| stop | 1.000 |" in result.stdout
    assert (out / "manifest.json").is_file() and examples.is_file()
    learned = json.loads((out / "questions.json").read_text())
    assert learned == sorted(question_key(q.id, q.text) for q in questions(range(9)))

    trace = tmp_path / "traces" / "q1.json"
    trace.parent.mkdir()
    args = ["query", str(kb), "which films share the director of Film 10", "--start", "Film 10",
            "--hop-mode", "relation", "--decider", "trained", "--decider-model", str(out), "--json",
            "--trace", str(trace)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["decider"].startswith("trained:model@")
    assert sorted(payload["answers"][0]["names"]) == ["Film 2", "Film 6"]

    # the walk's trace is itself training data (soft labels)
    result = runner.invoke(
        app, ["train", "decider", "--traces", str(trace.parent), "--out", str(tmp_path / "m2"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert "source_weak=0, source_trace=3" in result.stdout


def test_a_model_walking_another_graph_than_it_learned_over_says_so(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The manifest records the graph the model learned over (the triples file's content, whichever
    dataset reads it); ``query`` and ``eval`` walking another graph with it warn on stderr, naming the
    model and the graph, and still answer; over the graph it learned over they say nothing."""
    from graphwalk_core.training.graphs import triples_identity

    kb, qs = files
    out = tmp_path / "model"
    args = train_args(kb, qs, out)
    assert runner.invoke(app, args).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["graph"] == triples_identity(TRIPLES)
    other = tmp_path / "other.txt"
    other.write_text(kb.read_text() + "Film 0|written_by|Writer 0\n", encoding="utf-8")
    query = ["which films share the director of Film 10", "--start", "Film 10", "--hop-mode", "relation",
             "--decider", "trained", "--decider-model", str(out), "--json"]  # fmt: skip
    same = runner.invoke(app, ["query", str(kb), *query])
    assert same.exit_code == 0 and same.stderr == ""
    moved = runner.invoke(app, ["query", str(other), *query])
    assert moved.exit_code == 0, moved.output
    hint = "that graph's relations and question phrasings, not these (train one on this graph: graphwalk"
    assert " ".join(moved.stderr.split()).startswith(
        f"warning: the trained decider model@{DeciderModel.load(out).fingerprint[:12]} learned over another "
        f"graph than {other}'s: it knows {hint}"
    )
    unseen = tmp_path / "unseen.jsonl"
    unseen.write_text('{"id": "u1", "question": "who directed Film 10", "answers": ["Director 2"], '
                      '"start": "Film 10"}\n', encoding="utf-8")  # fmt: skip
    evaluate = ["eval", "custom", "--questions", str(unseen), "--system", "relation-greedy", "--decider",
                "trained", "--decider-model", str(out), "--quiet"]  # fmt: skip
    result = runner.invoke(app, [*evaluate, "--kb", str(other), "--out", str(tmp_path / "e1")])
    assert result.exit_code == 0, result.output
    assert " ".join(result.stderr.split()).startswith(
        f"warning: the trained decider {out} learned over another graph than custom-dev's: it knows {hint}"
    )
    result = runner.invoke(app, [*evaluate, "--kb", str(kb), "--out", str(tmp_path / "e2")])
    assert result.exit_code == 0 and "warning" not in result.stderr


def imported(source: Path, out: Path) -> Path:
    """``graphwalk graph import SOURCE --out OUT``: a SQLite file or a Parquet folder of the same graph."""
    result = runner.invoke(app, ["graph", "import", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("kind", ["kb.db", "kb-parquet"])
def test_a_model_over_a_sqlite_or_parquet_graph_is_checked_like_one_over_triples(
    files: tuple[Path, Path], tmp_path: Path, kind: str
) -> None:
    """The graph a model learned over was known for a triples file only: trained on a SQLite or Parquet
    graph its manifest said null, and ``query`` over one never warned, whatever graph the model knew. The
    identity is now the graph's named edges, whatever stores them: one model trained on the triples file
    and one on its import record the same graph, and each warns over another graph of any kind only."""
    from graphwalk_core.training.graphs import triples_identity

    kb, qs = files
    graph = imported(kb, tmp_path / kind)
    other_kb = tmp_path / "other.txt"
    other_kb.write_text(kb.read_text() + "Film 0|written_by|Writer 0\n", encoding="utf-8")
    other = imported(other_kb, tmp_path / f"other-{kind}")
    out = tmp_path / "model"
    args = train_args(graph, qs, out)
    assert runner.invoke(app, args).exit_code == 0
    assert json.loads((out / "manifest.json").read_text())["graph"] == triples_identity(TRIPLES)
    query = ["which films share the director of Film 10", "--start", "Film 10", "--hop-mode", "relation",
             "--decider", "trained", "--decider-model", str(out), "--json"]  # fmt: skip
    for same in (graph, kb):
        result = runner.invoke(app, ["query", str(same), *query])
        assert result.exit_code == 0 and result.stderr == "", result.output
    name = f"model@{DeciderModel.load(out).fingerprint[:12]}"
    for moved in (other, other_kb):
        result = runner.invoke(app, ["query", str(moved), *query])
        assert result.exit_code == 0, result.output
        assert " ".join(result.stderr.split()).startswith(
            f"warning: the trained decider {name} learned over another graph than {moved}'s"
        )


def test_a_query_hashes_the_graph_only_when_its_size_differs_from_the_models(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashing every edge of the graph would make each query cost time in proportion to the graph: a
    query over a graph with as many edges as the model's takes it for that graph without hashing, and
    hashes only a graph of another size (which may still be the model's: an ingested graph whose nodes
    share names)."""
    from graphwalk_core.training import graphs

    kb, qs = files
    out = tmp_path / "model"
    args = train_args(kb, qs, out)
    assert runner.invoke(app, args).exit_code == 0
    hashed: list[object] = []
    store_identity = graphs.store_identity

    async def counted(store: object) -> str:
        hashed.append(store)
        return await store_identity(store)  # type: ignore[arg-type]

    monkeypatch.setattr(graphs, "store_identity", counted)
    other = tmp_path / "other.txt"
    other.write_text(kb.read_text() + "Film 0|written_by|Writer 0\n", encoding="utf-8")
    query = ["which films share the director of Film 10", "--start", "Film 10", "--hop-mode", "relation",
             "--decider", "trained", "--decider-model", str(out), "--json"]  # fmt: skip
    for graph in (kb, imported(kb, tmp_path / "kb.db")):
        result = runner.invoke(app, ["query", str(graph), *query])
        assert result.exit_code == 0 and result.stderr == "", result.output
    assert hashed == []
    result = runner.invoke(app, ["query", str(other), *query])
    assert "learned over another graph than" in result.stderr
    assert len(hashed) == 1


def test_a_model_saved_before_compares_triples_files_only(files: tuple[Path, Path], tmp_path: Path) -> None:
    """A manifest whose ``graph`` is a triples file's fingerprint (models saved before graphs of every kind
    were identified) still warns over another triples file, and says nothing of a SQLite graph (not
    known), rather than a warning for every graph."""
    from graphwalk_core.eval.datasets.base import Knowledge
    from graphwalk_core.training.graphs import graph_identity

    kb, qs = files
    out = tmp_path / "model"
    args = train_args(kb, qs, out)
    assert runner.invoke(app, args).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["graph"] = graph_identity(Knowledge(graph="triples", kb_path=kb))
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text(kb.read_text() + "Film 0|written_by|Writer 0\n", encoding="utf-8")
    query = ["which films share the director of Film 10", "--start", "Film 10", "--hop-mode", "relation",
             "--decider", "trained", "--decider-model", str(out), "--json"]  # fmt: skip
    for graph in (kb, imported(other, tmp_path / "other.db")):
        result = runner.invoke(app, ["query", str(graph), *query])
        assert result.exit_code == 0 and result.stderr == "", result.output
    result = runner.invoke(app, ["query", str(other), *query])
    assert "learned over another graph than" in result.stderr


def test_no_training_epochs_is_an_error_naming_the_option(files: tuple[Path, Path], tmp_path: Path) -> None:
    """``--max-iter 0`` fits nothing: an error naming the option, not an IndexError, and no model folder."""
    kb, qs = files
    out = tmp_path / "model"
    args = ["train", "decider", "--graph", str(kb), "--questions", str(qs), "--out", str(out),
            "--max-iter", "0", "--quiet"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == "error: --max-iter must be at least 1, got 0"
    assert not out.exists()


@pytest.mark.parametrize("under", ["", "sub"])
def test_an_out_that_is_a_file_is_refused_before_training(
    files: tuple[Path, Path], tmp_path: Path, under: str
) -> None:
    """``--out`` naming a file (or a folder inside one) is an error naming it, before any labeling or
    fitting, not an OSError traceback once the model is trained; the file is left as it was."""
    kb, qs = files
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    out = taken / under if under else taken
    args = train_args(kb, qs, out)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == f"error: --out {out}: {taken} is a file, not a folder"
    assert taken.read_text() == "mine\n"


def test_a_question_without_a_start_is_an_error_naming_the_file(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """``start`` is optional for ``eval custom`` but weak supervision needs one: the error names the file."""
    kb, _ = files
    qs = tmp_path / "nostart.jsonl"
    qs.write_text('{"question": "who directed Film 1", "answers": ["Director 1"]}\n', encoding="utf-8")
    args = train_args(kb, qs, tmp_path / "m")
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    expected = f"error: {qs}: question q00001 has no start node: weak supervision needs one"
    assert result.output.splitlines()[-1] == expected


def test_the_trained_decider_defaults_to_the_warehouses_newest_model(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--decider trained`` without a model folder walks with the warehouse's newest model (what
    ``graphwalk demo`` and the Dagster asset train), as the Dagster ``-trained`` partitions do; with none
    there the error says where one would be."""
    from graphwalk_core.settings import get_settings
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import mark_latest, model_folder

    kb, qs = files
    warehouse = Warehouse(tmp_path / "wh")
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(warehouse.root))
    monkeypatch.delenv("GRAPHWALK_DECIDER_MODEL", raising=False)
    get_settings.cache_clear()
    args = ["query", str(kb), "which films share the director of Film 10", "--start", "Film 10",
            "--hop-mode", "relation", "--decider", "trained", "--json"]  # fmt: skip
    try:
        missing = runner.invoke(app, args)
        assert missing.exit_code == 2
        assert " ".join(missing.output.split()) == (
            "error: the trained decider needs a model folder: set GRAPHWALK_DECIDER_MODEL or "
            f"--decider-model, or train one into the warehouse ({warehouse.root}) with graphwalk demo "
            "or Dagster's trained_decider asset"
        )
        folder = model_folder(warehouse, "0123456789abcdef")
        trained = runner.invoke(app, ["train", "decider", "--graph", str(kb), "--questions", str(qs),
                                      "--out", str(folder), "--max-iter", "200", "--quiet"])  # fmt: skip
        assert trained.exit_code == 0, trained.output
        mark_latest(warehouse, folder)
        result = runner.invoke(app, args)
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["decider"].startswith("trained:0123456789ab@")
    assert sorted(payload["answers"][0]["names"]) == ["Film 2", "Film 6"]


def test_eval_with_the_warehouses_model_refuses_the_questions_it_learned_from(
    tmp_path: Path, metaqa_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``graphwalk demo`` trains the warehouse's model on 200 seeded dev questions per hop count;
    ``eval --decider trained`` (no model named) on the same seed's dev questions would score it on them."""
    import pyarrow as pa

    from graphwalk_core.eval.datasets import load_dataset
    from graphwalk_core.settings import get_settings
    from graphwalk_core.training.examples import SCHEMA
    from graphwalk_core.training.store import EXAMPLES
    from graphwalk_core.warehouse import Warehouse
    from graphwalk_core.warehouse.models import mark_latest, model_folder

    warehouse = Warehouse(tmp_path / "wh")
    learned = load_dataset("metaqa-1hop", split="dev", n=200, seed=0).questions
    warehouse.write(EXAMPLES, pa.Table.from_pylist([{"question_id": q.id} for q in learned], schema=SCHEMA))
    folder = model_folder(warehouse, "0123456789abcdef")
    folder.mkdir(parents=True)
    mark_latest(warehouse, folder)
    monkeypatch.setenv("GRAPHWALK_WAREHOUSE", str(warehouse.root))
    monkeypatch.delenv("GRAPHWALK_DECIDER_MODEL", raising=False)
    get_settings.cache_clear()
    args = ["eval", "metaqa", "--hops", "1", "--n", "5", "--system", "relation-greedy",
            "--decider", "trained", "--out", str(tmp_path / "out")]  # fmt: skip
    try:
        result = runner.invoke(app, args)
    finally:
        get_settings.cache_clear()
    first = load_dataset("metaqa-1hop", split="dev", n=5, seed=0).questions[0].id
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == (
        f"error: 5 of these questions are ones the newest model of {warehouse.root} learned from (first: "
        f"{first}): score questions it has not learned from (--split test)"
    )
    # a model named on the command line is checked against the list in its own folder
    named = tmp_path / "named"
    named.mkdir()
    (named / "questions.json").write_text(json.dumps(sorted(q.id for q in learned[:3])), encoding="utf-8")
    try:
        result = runner.invoke(app, [*args, "--decider-model", str(named)])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 2
    assert " ".join(result.output.split()) == (
        f"error: 3 of these questions are ones the model {named} learned from (first: {first}): score "
        "questions it has not learned from (--split test)"
    )


def test_refuses_test_split_and_missing_inputs(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "decider", "--dataset", "metaqa", "--split", "test", "--out", "x"])
    assert result.exit_code == 2 and "never on test" in result.output
    result = runner.invoke(app, ["train", "decider", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "nothing to learn from" in result.output
    result = runner.invoke(app, ["train", "decider", "--questions", "q.jsonl", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "--questions needs --graph" in result.output


def test_questions_over_an_ingested_graph_name_their_starts(tmp_path: Path, minilm_dir: Path) -> None:
    """An ingested graph's node ids are hashes: a question file's ``start`` names a node (as ``eval custom``
    reads it), so training resolves it by exact name; a start that is neither id nor name is an error."""
    films = tmp_path / "films"
    films.mkdir()
    rows = [f"Film {i},Director {i % 4},Actor {i % 5}" for i in range(12)]
    (films / "films.csv").write_text("title,director,star\n" + "\n".join(rows) + "\n", encoding="utf-8")
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "films.csv:\n  name: title\n  type: film\n  relations:\n"
        "    - {column: director, type: directed_by}\n    - {column: star, type: starred_actors}\n",
        encoding="utf-8",
    )
    graph = tmp_path / "g.sqlite"
    args = [
        "ingest",
        str(films),
        "--mapping",
        str(mapping),
        "--graph",
        str(graph),
        "--routing",
        "exact",
        "-q",
    ]
    assert runner.invoke(app, args).exit_code == 0
    qs = tmp_path / "q.jsonl"
    lines = [
        {"id": f"{kind}-{i}", "question": f"who {verb} Film {i}", "answers": [answer], "start": f"Film {i}"}
        for i in range(12)
        for kind, verb, answer in (
            ("dir", "directed", f"Director {i % 4}"),
            ("star", "starred in", f"Actor {i % 5}"),
        )
    ]
    qs.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = tmp_path / "model"
    args = train_args(graph, qs, out)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "source_weak=48, source_trace=0" in result.stdout
    assert "questions without a path to a gold answer: 0" in result.stdout

    qs.write_text(
        json.dumps({"id": "x", "question": "who directed it", "answers": ["Director 1"], "start": "Film 1O"})
        + "\n"
    )
    result = runner.invoke(app, [*args[:-3], "--out", str(tmp_path / "m2")])
    assert result.exit_code == 2
    assert (
        f"error: {qs}: question x: start 'Film 1O' is neither a node id nor a node name of the graph "
        "(did you mean: Film 1, Film 11, Film 10?)"
    ) in " ".join(result.output.split())
    # starts found, but no path reaches the answers: say so, not only "no decision examples"
    unreachable = {"id": "y", "question": "who directed it", "answers": ["Nobody"], "start": "Film 1"}
    qs.write_text(json.dumps(unreachable) + "\n")
    result = runner.invoke(app, [*args[:-3], "--out", str(tmp_path / "m3")])
    assert result.exit_code == 2
    assert " ".join(result.output.split()).endswith(
        "error: no decision examples to train on: none of the 1 questions has a path from its start to a "
        "gold answer within 3 hops of the graph"
    )


def test_hops_are_checked_and_dataset_options_need_a_dataset(tmp_path: Path) -> None:
    """``--hops 7`` was "unknown dataset 'metaqa-7hop'", not naming the option; ``--hops``, ``--n`` and
    ``--data-dir`` beside ``--questions`` (read whole) were silently unused."""
    out = str(tmp_path / "m")
    outputs = []
    for args in (
        ["--dataset", "metaqa", "--hops", "1", "--hops", "7"],
        ["--questions", "q.jsonl", "--graph", "kb.txt", "--hops", "1"],
        ["--questions", "q.jsonl", "--graph", "kb.txt", "--n", "5", "--data-dir", "d"],
    ):
        result = runner.invoke(app, ["train", "decider", "--out", out, *args])
        outputs.append((result.exit_code, result.output.strip()))
    assert outputs == [
        (2, "error: --hops must be 1, 2 or 3, got 1, 7"),
        (2, "error: --hops picks questions of --dataset: a --questions file is read whole"),
        (2, "error: --n, --data-dir pick questions of --dataset: a --questions file is read whole"),
    ]
    assert not (tmp_path / "m").exists()


def test_a_hold_out_share_or_depth_out_of_range_is_an_error_naming_the_option(tmp_path: Path) -> None:
    """``--hold-out-templates -0.5`` trained as if 0, ``1`` and ``--max-depth 0`` failed later with "no
    decision examples to train on"; now each is an error naming the option, before any work."""
    base = ["train", "decider", "--out", str(tmp_path / "m"), "--questions", "q.jsonl", "--graph", "kb.txt"]
    outputs = []
    for args in (["--hold-out-templates", "-0.5"], ["--hold-out-templates", "1"], ["--max-depth", "0"]):
        result = runner.invoke(app, [*base, *args])
        outputs.append((result.exit_code, result.output.strip()))
    assert outputs == [
        (2, "error: --hold-out-templates must be at least 0 and below 1, got -0.5"),
        (2, "error: --hold-out-templates must be at least 0 and below 1, got 1.0"),
        (2, "error: --max-depth must be at least 1, got 0"),
    ]
    assert not (tmp_path / "m").exists()


def test_ctrl_c_during_the_fit_stops_it(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole command ran under asyncio.run, whose Ctrl-C handler only cancels at the next await: the
    fit (no await) ran to its end, wrote the model and printed its summary, then the command exited 130."""
    import signal

    from graphwalk_core.training import fit

    reached: list[str] = []

    def fit_interrupted(*args: object, **kwargs: object) -> object:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while fitting
        reached.append("after the interrupt")
        raise AssertionError("the fit went on after Ctrl-C")

    monkeypatch.setattr(fit, "fit_decider", fit_interrupted)
    kb, qs = files
    args = train_args(kb, qs, tmp_path / "m")
    # Ctrl-C as a terminal delivers it: a suite started in the background (`make test &`) ignores SIGINT
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = runner.invoke(app, args)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (reached, result.exit_code, result.output) == ([], 130, "")
    assert not (tmp_path / "m").exists()
