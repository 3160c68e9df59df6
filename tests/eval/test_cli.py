"""`graphwalk eval` end to end on a custom dataset (fake decider, hashing embedder, no LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.cli.eval import SYSTEM_CHOICES
from graphwalk_core.eval.systems.registry import SYSTEM_NAMES

runner = CliRunner()


def _files(tmp_path: Path) -> tuple[Path, Path]:
    kb = tmp_path / "kb.txt"
    kb.write_text(
        "Heat|directed_by|Michael Mann\nHeat|release_year|1995\nRonin|directed_by|John Frankenheimer\n"
    )
    questions = tmp_path / "q.csv"
    questions.write_text("id,question,answers,start,hops\nq1,who directed Heat,Michael Mann,Heat,1\n"
                         "q2,who directed Ronin,John Frankenheimer,Ronin,1\n")  # fmt: skip
    return kb, questions


def test_eval_custom_writes_results_and_summary(tmp_path: Path) -> None:
    kb, questions = _files(tmp_path)
    out = tmp_path / "out"
    args = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--system", "relation-greedy"]
    args += [
        "--system",
        "vector-rag",
        "--decider",
        "fake",
        "--embed-model-path",
        "hashing",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, [*args, "--quiet", "--set", "show_types=false"])
    assert result.exit_code == 0, result.output
    assert "### custom (dev)" in result.output
    assert (
        "| 1 | vector-rag | 2 | skipped: no LLM configured (set GRAPHWALK_LLM_MODEL or --llm-model)"
        in result.output
    )
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["system"], r["question_id"], r["status"]) for r in table] == [
        ("relation-greedy", "q1", "ok"),
        ("relation-greedy", "q2", "ok"),
        ("vector-rag", "q1", "skipped"),
        ("vector-rag", "q2", "skipped"),
    ]
    assert all(r["decider"] == "fake:seed=0" for r in table[:2])
    assert (out / "f1_by_hops.png").exists() and (out / "runs.json").exists()
    assert sorted(p.name.split("-")[2] for p in (out / "runs").iterdir()) == ["relation", "vector"]
    # a second invocation resumes: nothing is run twice, and `eval report` rebuilds the same table
    again = runner.invoke(app, [*args, "--quiet", "--set", "show_types=false"])
    assert again.exit_code == 0, again.output
    reused = [line.split(" from ")[0] for line in again.output.splitlines() if " reused " in line]
    assert reused == [
        "custom · relation-greedy: reused 2 of 2 answers",
        "custom · vector-rag: reused 2 of 2 answers",
    ]
    assert pq.read_table(out / "results.parquet").column("reused").to_pylist() == [True] * 4
    rebuilt = runner.invoke(app, ["eval", "report", "--out", str(out)])
    assert rebuilt.exit_code == 0, rebuilt.output
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["system"], r["question_id"], r["reused"]) for r in table] == [
        ("relation-greedy", "q1", True),
        ("relation-greedy", "q2", True),
        ("vector-rag", "q1", True),
        ("vector-rag", "q2", True),
    ]


def test_eval_custom_rerun_answers_edited_questions_again(tmp_path: Path) -> None:
    """Editing the questions file and rerunning into the same --out rescores the edited questions."""
    kb, questions = _files(tmp_path)
    out = tmp_path / "out [bold]"  # printed as it is spelled, not as rich markup
    args = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--system", "relation-greedy"]
    args += ["--decider", "fake", "--out", str(out), "--quiet"]
    assert runner.invoke(app, args).exit_code == 0
    questions.write_text(questions.read_text().replace("Heat,Michael Mann,", "Heat,Al Pacino,"))
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (note,) = [line for line in result.output.splitlines() if "custom · relation-greedy:" in line]
    assert note.startswith("custom · relation-greedy: reused 1 of 2 answers from ")
    assert note.endswith(" (same questions, graph and system); answered 1 edited question again")
    assert f" from {out}/runs/" in note
    expected = [("q1", ["Al Pacino"], False), ("q2", ["John Frankenheimer"], True)]
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["question_id"], r["gold"], r["reused"]) for r in table] == expected
    # `eval report` rebuilds the rows from the checkpoint: each says how this run obtained its answer
    rebuilt = runner.invoke(app, ["eval", "report", "--out", str(out)])
    assert rebuilt.exit_code == 0, rebuilt.output
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["question_id"], r["gold"], r["reused"]) for r in table] == expected


def test_eval_errors_are_clean(tmp_path: Path) -> None:
    kb, _ = _files(tmp_path)
    base = ["eval", "custom", "--kb", str(kb), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*base, "--questions", str(tmp_path / "nope.csv"), "--system", "x"])
    assert result.exit_code == 2
    assert "error: custom question file not found:" in result.output
    _, questions = _files(tmp_path)
    opts = [
        "--questions",
        str(questions),
        "--system",
        "bogus",
        "--decider",
        "fake",
        "--embed-model-path",
        "hashing",
    ]
    result = runner.invoke(app, [*base, *opts])
    assert result.exit_code == 2
    assert "error: unknown system 'bogus'" in result.output


def test_eval_custom_kb_must_be_a_triples_file(tmp_path: Path) -> None:
    """A graph database, a folder or a non-UTF-8 file given as --kb is a clean error, not a traceback."""
    _, questions = _files(tmp_path)
    graph, folder, latin1 = tmp_path / "graph.sqlite", tmp_path / "graph", tmp_path / "latin1.txt"
    graph.write_bytes(b"SQLite format 3\x00\x10\x00\x86\x01")
    folder.mkdir()
    (folder / "nodes.parquet").write_bytes(b"PAR1")  # a Parquet graph
    documents = tmp_path / "docs"
    documents.mkdir()
    latin1.write_bytes("Heat|directed_by|Michael Mann\nCaf\xe9|r|b\n".encode("latin-1"))
    base = ["eval", "custom", "--questions", str(questions), "--system", "relation-greedy"]
    base += ["--decider", "fake", "--out", str(tmp_path / "o"), "--quiet", "--kb"]
    outputs = []
    for kb in (graph, folder, documents, latin1):
        result = runner.invoke(app, [*base, str(kb)])
        assert result.exit_code == 2, result.output
        outputs.append(result.output.replace(str(tmp_path), "T").strip())
    assert outputs == [
        "error: --kb expects a subject|relation|object triples text file, not the database or folder "
        "T/graph.sqlite (for a graph: `graphwalk graph export T/graph.sqlite --format triples --out kb.txt`)",
        "error: --kb expects a subject|relation|object triples text file, not the database or folder "
        "T/graph (for a graph: `graphwalk graph export T/graph --format triples --out kb.txt`)",
        "error: --kb expects a subject|relation|object triples text file, not the folder T/docs; a folder "
        "of documents is a source: ingest it into a graph first (`graphwalk ingest T/docs --graph "
        "graph.sqlite`), then `graphwalk graph export graph.sqlite --format triples --out kb.txt`",
        "error: T/latin1.txt:2: not UTF-8 text (byte 0xe9): a triples file holds "
        "'subject|relation|object' lines (a graph database or Parquet graph is not one)",
    ]


def test_parse_sets() -> None:
    import pytest
    import typer

    from graphwalk_core.cli.eval import parse_sets

    assert parse_sets(["show_types=false", "beam_width=5", "linking=resolve", "length_alpha=0.5"]) == {
        "show_types": False,
        "beam_width": 5,
        "linking": "resolve",
        "length_alpha": 0.5,
    }
    with pytest.raises(typer.BadParameter, match="KEY=VALUE"):
        parse_sets(["nokey"])


def test_system_help_names_every_system_whole_in_80_columns() -> None:
    """``--system``'s help lists the registry's systems, and wraps instead of cutting them off."""
    assert SYSTEM_CHOICES == SYSTEM_NAMES
    result = CliRunner().invoke(app, ["eval", "metaqa", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    words = {word.strip(",│") for line in result.output.splitlines() for word in line.split()}
    assert set(SYSTEM_NAMES) <= words
    assert "relatio…" not in result.output


def test_a_mistyped_or_unread_decider_option_is_an_error_before_anything_is_written(tmp_path: Path) -> None:
    """A typo or a model folder no decider reads would otherwise give skipped rows (or local-decider
    numbers) and exit 0."""
    kb, questions = _files(tmp_path)
    model, missing = tmp_path / "model", tmp_path / "nope"
    model.mkdir()
    base = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--system", "relation-greedy"]
    base += ["--embed-model-path", "hashing", "--quiet"]
    cases = {
        "typo": (["--decider", "bogus"], "--decider must be one of jev, local, trained, fake (got 'bogus')"),
        "missing": (
            ["--decider", "trained", "--decider-model", str(missing)],
            f"--decider-model {missing}: no such folder",
        ),
        "unread": (
            ["--decider", "local", "--decider-model", str(model)],
            "--decider-model is read by the trained decider only: add --decider trained (the decider "
            "would be local)",
        ),
    }
    for name, (extra, error) in cases.items():
        out = tmp_path / name
        result = runner.invoke(app, [*base, *extra, "--out", str(out)])
        assert (result.exit_code, " ".join(result.output.split())) == (2, f"error: {error}")
        assert not out.exists()


def test_report_of_a_folder_without_runs_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "typo"
    result = runner.invoke(app, ["eval", "report", "--out", str(out)])
    assert (result.exit_code, " ".join(result.output.split())) == (
        2,
        f"error: no eval run checkpointed under {out / 'runs'}: give the --out folder of an eval command",
    )
    assert not out.exists()


def test_corpus_subset_must_keep_at_least_one_passage(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["eval", "2wiki-retrieval", "--corpus-subset", "0", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "Invalid value for '--corpus-subset'" in result.output


def test_every_system_checks_its_set_options_before_any_question(tmp_path: Path) -> None:
    """An unknown --set key or a bad value is a one-line error naming it (rc 2), for rankers and RAG
    too, also for a system skipped for want of an LLM, and nothing runs."""
    kb, questions = _files(tmp_path)
    out = tmp_path / "o"
    base = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--out", str(out), "--quiet"]
    base += ["--decider", "fake", "--embed-model-path", "hashing", "--system", "relation-greedy"]
    ppr_keys = "k, routing, damping, dense_k, dense_weight, title_weight, relation_weight, walk_weight, "
    ppr_keys += "walk_k, max_iterations, tolerance"
    cases = {
        ("graph-ppr", "nosuch=1"): "error: unknown --set key 'nosuch': no system of this run takes it "
        f"(relation-greedy takes linking, routing, strategy, hop_mode, direction, beam_width, n_samples, "
        "length_alpha, prob_floor, temperature, top_p, seed, beam_batching, prefilter_threshold, "
        "prefilter_top_n, max_frontier, leads_to_names, max_witnesses, exclude_visited, "
        "allow_stop_at_start, show_types, stop_style, relation_glosses, answer_type, budget; "
        f"graph-ppr takes {ppr_keys})",
        ("graph-ppr", "dampng=0.5"): "error: unknown --set key 'dampng' (did you mean damping?): no system "
        "of this run takes it (relation-greedy takes linking, routing, strategy, hop_mode, direction, "
        "beam_width, n_samples, length_alpha, prob_floor, temperature, top_p, seed, beam_batching, "
        "prefilter_threshold, prefilter_top_n, max_frontier, leads_to_names, max_witnesses, "
        "exclude_visited, allow_stop_at_start, show_types, stop_style, relation_glosses, answer_type, "
        f"budget; graph-ppr takes {ppr_keys})",
        ("graph-ppr", "damping=2"): "error: bad --set damping=2 for graph-ppr: Input should be less than 1",
        ("graph-ppr", "k=abc"): "error: bad --set k=abc for graph-ppr: Input should be a valid integer, "
        "unable to parse string as an integer",
        ("vector-rag", "k=abc"): "error: bad --set k=abc for vector-rag: Input should be a valid integer, "
        "unable to parse string as an integer",
        ("iter-rag", "max_docs=0"): "error: bad --set max_docs=0 for iter-rag: Input should be greater "
        "than or equal to 1",
        ("typed-path", "profile=nope"): "error: bad --set profile=nope for typed-path: choose one of "
        "typed-path/v1-lexical, typed-path/v1-vector, typed-path/v1-hybrid",
        ("dense", "k=0"): "error: bad --set k=0 for dense: Input should be greater than or equal to 1",
    }
    for (system, option), expected in cases.items():
        result = runner.invoke(app, [*base, "--system", system, "--set", option])
        assert (result.exit_code, result.output.strip()) == (2, expected)
        assert not out.exists()  # relation-greedy, listed first, did not run either


def test_a_single_system_names_its_own_set_keys(tmp_path: Path) -> None:
    kb, questions = _files(tmp_path)
    base = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*base, "--system", "vector-rag", "--set", "max_calls=3"])
    assert (result.exit_code, result.output.strip()) == (
        2,
        "error: unknown --set key 'max_calls': vector-rag takes k",
    )


def _metaqa(tmp_path: Path) -> tuple[Path, Path]:
    """A MetaQA data folder of 8 one-hop dev questions (5 of template 'who directed ENTITY') and a
    trained model that held that template out."""
    films = ["Heat", "Ronin", "Thief", "Collateral", "Manhunter", "Alien", "Jaws", "Rocky"]
    kb = "".join(f"{f}|directed_by|Director {i}\n{f}|release_year|{1980 + i}\n" for i, f in enumerate(films))
    qa = [f"who directed [{f}]\tDirector {i}" for i, f in enumerate(films[:5])]
    qa += [f"when was [{f}] released\t{1985 + i}" for i, f in enumerate(films[5:])]
    hop = tmp_path / "data" / "metaqa" / "1-hop"
    (hop / "vanilla").mkdir(parents=True)
    (hop / "vanilla" / "qa_dev.txt").write_text("\n".join(qa) + "\n")
    (hop / "qa_dev_qtype.txt").write_text("movie_to_director\n" * 5 + "movie_to_year\n" * 3)
    (tmp_path / "data" / "metaqa" / "kb.txt").write_text(kb)
    model = tmp_path / "model"
    model.mkdir()
    (model / "manifest.json").write_text(json.dumps({"held_out_templates": ["who directed ENTITY"]}))
    return tmp_path / "data", model


def test_templates_from_keeps_the_held_out_questions_of_the_n_subset_and_is_recorded(tmp_path: Path) -> None:
    """--n 4 --templates-from draws the seeded 4-question subset, then keeps its questions of the
    held-out template (the order the published results were measured in); run.json says so."""
    data, model = _metaqa(tmp_path)
    out = tmp_path / "out"
    args = ["eval", "metaqa", "--hops", "1", "--n", "4", "--templates-from", str(model), "--data-dir"]
    args += [str(data), "--system", "relation-greedy", "--decider", "fake", "--out", str(out), "--quiet"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    ids = pq.read_table(out / "results.parquet").column("question_id").to_pylist()
    assert ids == ["metaqa-1hop-dev-00005", "metaqa-1hop-dev-00002"]  # 2 of the 4 drawn have the template
    (run_json,) = (out / "runs").glob("*/run.json")
    info = json.loads(run_json.read_text())["dataset_info"]
    assert (info["templates_from"], info["held_out_questions"], info["seed"]) == (str(model), 2, 0)


def test_templates_from_leaving_no_question_is_an_error(tmp_path: Path) -> None:
    data, model = _metaqa(tmp_path)
    (model / "manifest.json").write_text(json.dumps({"held_out_templates": ["who wrote ENTITY"]}))
    args = ["eval", "metaqa", "--hops", "1", "--templates-from", str(model), "--data-dir", str(data)]
    args += ["--system", "relation-greedy", "--decider", "fake", "--out", str(tmp_path / "out"), "--quiet"]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.output.replace(str(tmp_path), "T").strip()) == (
        2,
        "error: --templates-from T/model: no question of metaqa-1hop-dev has a template held out by "
        "that model (1 held out)",
    )
    assert not (tmp_path / "out").exists()


def test_a_missing_file_names_its_flag_and_hops_are_checked(tmp_path: Path) -> None:
    base = ["--system", "relation-greedy", "--out", str(tmp_path / "o"), "--quiet"]
    outputs = []
    for args in (
        ["eval", "hotpotqa", "--file", str(tmp_path / "nope.jsonl")],
        ["eval", "2wiki-retrieval", "--corpus", str(tmp_path / "c.json")],
        ["eval", "2wiki-retrieval", "--questions", str(tmp_path / "q.json")],
        ["eval", "hotpotqa", "--split", "test", "--data-dir", str(tmp_path)],
        ["eval", "metaqa", "--hops", "1", "--hops", "4"],
    ):
        result = runner.invoke(app, [*args, *base])
        outputs.append((result.exit_code, result.output.replace(str(tmp_path), "T").strip()))
    assert outputs == [
        (2, "error: hotpotqa question file not found: T/nope.jsonl (check --file)"),
        (2, "error: 2wiki-retrieval corpus not found: T/c.json (check --corpus)"),
        (2, "error: 2wiki-retrieval question file not found: T/q.json (check --questions)"),
        (
            2,
            "error: hotpotqa has dev questions only in the data folder "
            "(hotpotqa/hotpotqa_dev_ircotfmt_300.jsonl): --split=test needs a question file of that split "
            "(--file)",
        ),
        (2, "error: --hops must be 1, 2 or 3, got 1, 4"),
    ]


def test_retrieval_preset_is_checked_and_not_silently_ignored(tmp_path: Path) -> None:
    base = ["eval", "2wiki-retrieval", "--out", str(tmp_path / "o")]
    for extra, error in (
        (["--preset", "bogus"], "error: --preset must be one of relation-greedy, relation-beam, "
         "entity-greedy, entity-beam (got 'bogus')"),
        (["--system", "graph-ppr", "--preset", "entity-beam"], "error: --preset picks the walk run "
         "without --system: name the walk with --system"),
    ):  # fmt: skip
        result = runner.invoke(app, [*base, *extra])
        assert (result.exit_code, " ".join(result.output.split())) == (2, error)
    assert not (tmp_path / "o").exists()


def test_eval_custom_corpus_walks_from_a_start_named_by_its_name(tmp_path: Path) -> None:
    """A corpus is ingested, so its node ids are hashes: a question's ``start`` names its node (it was an
    error row, "start node not in the graph: 'Inception' (did you mean: Inception?)")."""
    corpus = tmp_path / "corpus.json"
    corpus.write_text(
        json.dumps([{"title": "Inception", "text": "Inception is a film by Christopher Nolan."}])
    )
    questions = tmp_path / "q.jsonl"
    row = {
        "id": "q1",
        "question": "Who made Inception?",
        "answers": ["Christopher Nolan"],
        "start": "Inception",
    }
    questions.write_text(json.dumps(row) + "\n")
    out = tmp_path / "o"
    args = ["eval", "custom", "--questions", str(questions), "--corpus", str(corpus), "--system",
            "relation-greedy", "--decider", "fake", "--embed-model-path", "hashing", "--out", str(out),
            "--quiet"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out / "results.parquet", columns=["status", "error", "gold_start"]).to_pylist()
    assert rows == [{"status": "ok", "error": None, "gold_start": "Inception"}]


def test_a_system_named_twice_runs_and_counts_once(tmp_path: Path) -> None:
    """``--system relation-greedy --system relation-greedy`` ran the system twice: the report held each
    question twice (n 4 for 2 questions), the second copy labelled reused."""
    kb, questions = _files(tmp_path)
    out = tmp_path / "out"
    args = ["eval", "custom", "--questions", str(questions), "--kb", str(kb), "--decider", "fake"]
    args += ["--system", "relation-greedy", "--system", "relation-greedy", "--embed-model-path", "hashing"]
    result = runner.invoke(app, [*args, "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["question_id"], r["reused"]) for r in table] == [("q1", False), ("q2", False)]
    assert [r["n"] for r in pq.read_table(out / "summary.parquet").to_pylist()] == [2]


def test_a_bad_concurrency_or_an_out_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    """``--concurrency 0`` and an ``--out`` that is a file ended in a traceback (a ValueError, a
    NotADirectoryError under OUT/runs); now each is an error naming the option."""
    kb, questions = _files(tmp_path)
    (tmp_path / "taken").write_text("mine\n", encoding="utf-8")
    base = ["eval", "custom", "--kb", str(kb), "--questions", str(questions), "--system", "relation-greedy"]
    base += ["--decider", "fake", "--embed-model-path", "hashing", "--quiet"]
    result = runner.invoke(
        app, [*base, "--out", str(tmp_path / "o"), "--concurrency", "0"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2
    assert "Invalid value for '--concurrency': Input should be greater than or equal to 1" in result.output
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "taken" / "o")])
    taken = tmp_path / "taken"
    assert (result.exit_code, result.output) == (
        2,
        f"error: --out {taken / 'o'}: {taken} is a file, not a folder\n",
    )
    assert taken.read_text(encoding="utf-8") == "mine\n" and not (tmp_path / "o").exists()


def test_a_custom_file_not_there_or_a_folder_names_its_option(tmp_path: Path) -> None:
    """A missing ``--questions`` or ``--kb`` said "set --data-dir or GRAPHWALK_DATA_DIR", an option that
    has no part in it, and a folder given for a file was "not found"; now each names its own option."""
    kb, questions = _files(tmp_path)
    base = ["eval", "custom", "--system", "relation-greedy", "--out", str(tmp_path / "o"), "--quiet"]
    outputs = []
    for args in (
        ["--questions", str(tmp_path / "nope.csv"), "--kb", str(kb)],
        ["--questions", str(tmp_path), "--kb", str(kb)],
        ["--questions", str(questions), "--kb", str(tmp_path / "nope.txt")],
    ):
        result = runner.invoke(app, [*base, *args])
        outputs.append((result.exit_code, result.output.replace(str(tmp_path), "T").strip()))
    result = runner.invoke(app, ["train", "decider", "--out", str(tmp_path / "m"), "--graph", str(kb),
                                 "--questions", str(tmp_path / "nope.csv")])  # fmt: skip
    outputs.append((result.exit_code, result.output.replace(str(tmp_path), "T").strip()))
    assert outputs == [
        (2, "error: custom question file not found: T/nope.csv (check --questions)"),
        (2, "error: custom question file T is a folder, not a file (check --questions)"),
        (2, "error: custom KB not found: T/nope.txt (check --kb)"),
        (2, "error: custom question file not found: T/nope.csv (check --questions)"),
    ]
