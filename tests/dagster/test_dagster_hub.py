"""The eval_questions asset reads a dataset repo pinned to a commit (config ``hub``) over HTTP."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster_fixtures import warehouse_rows
from huggingface_hub import constants
from servers.hf_hub_server import HubServer, hub_server  # noqa: F401

from graphwalk_core.errors import ConfigError
from graphwalk_core.eval.partition_dataset import load_partition_dataset
from graphwalk_core.warehouse import Warehouse
from graphwalk_dagster.defs.eval.assets import eval_questions, eval_results
from graphwalk_dagster.defs.eval.partitions import eval_key
from graphwalk_dagster.defs.shared.resources import (
    DeciderResource,
    EmbedderResource,
    LLMResource,
    WarehouseResource,
)

REPO, SHA = "tests/metaqa-mini", "0123456789abcdef0123456789abcdef01234567"
FILES = {
    "metaqa/kb.txt": "Heat|directed_by|Michael Mann\nRonin|directed_by|John Frankenheimer\n",
    "metaqa/1-hop/vanilla/qa_dev.txt": (
        "who directed [Heat]\tMichael Mann\nwho directed [Ronin]\tJohn Frankenheimer\n"
    ),
    "metaqa/1-hop/qa_dev_qtype.txt": "movie_to_director\nmovie_to_director\n",
}


def test_eval_questions_from_a_pinned_hub_repo(
    hub_server: HubServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub_server.add_repo(REPO, SHA, FILES)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # tests run with HF_HUB_OFFLINE=1
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    config = {"hub": f"{REPO}@{SHA}", "hub_endpoint": hub_server.endpoint, "n": None, "split": "dev"}
    with dg.instance_for_test() as instance:
        result = _metaqa_questions(tmp_path, instance, config)
        assert result.success
        dataset = result.output_for_node("eval_questions")
    assert [(q.text, q.gold) for q in dataset.questions] == [
        ("who directed Heat", ["Michael Mann"]),
        ("who directed Ronin", ["John Frankenheimer"]),
    ]
    snapshot = tmp_path / "cache" / "datasets--tests--metaqa-mini" / "snapshots" / SHA
    assert dataset.knowledge.kb_path == snapshot / "metaqa" / "kb.txt"


def _metaqa_questions(
    tmp_path: Path, instance: dg.DagsterInstance, config: dict[str, object], *, raise_on_error: bool = True
) -> dg.ExecuteInProcessResult:
    """eval_questions of the metaqa-1hop × relation-greedy partition under ``config``."""
    return dg.materialize(
        [eval_questions],
        partition_key=eval_key("metaqa-1hop", "relation-greedy"),
        resources={"warehouse": WarehouseResource(root=str(tmp_path / "warehouse"))},
        run_config={"ops": {"eval_questions": {"config": config}}},
        instance=instance,
        raise_on_error=raise_on_error,
    )


def _failure(tmp_path: Path, instance: dg.DagsterInstance, config: dict[str, object]) -> tuple[str, str]:
    """The class and message of the error eval_questions (metaqa-1hop) fails with under ``config``."""
    result = _metaqa_questions(tmp_path, instance, config, raise_on_error=False)
    (failure,) = result.get_step_failure_events()
    cause = failure.step_failure_data.error.cause
    return cause.cls_name, cause.message.strip().removeprefix(f"graphwalk_core.errors.{cause.cls_name}: ")


def test_a_dev_only_metaqa_copy_says_the_split_defaults_to_test(
    hub_server: HubServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A MetaQA partition scores test unless told: a hub repo or data folder holding dev only fails
    saying so (and how to score dev); a split named, or a file every split reads, gets no such note."""
    hub_server.add_repo(REPO, SHA, FILES)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # tests run with HF_HUB_OFFLINE=1
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    for name, text in FILES.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(text, encoding="utf-8")
    note = "no split named: a MetaQA partition scores test by default; `split: dev` scores dev questions"
    hub = {"hub": f"{REPO}@{SHA}", "hub_endpoint": hub_server.endpoint}
    with dg.instance_for_test() as instance:
        assert _failure(tmp_path, instance, hub) == (
            "InputError",
            f"dataset repo {REPO}@{SHA} has no metaqa/1-hop/vanilla/qa_test.txt, "
            "metaqa/1-hop/qa_test_qtype.txt (it must hold the ../shared/data layout, e.g. "
            f"metaqa/1-hop/vanilla/qa_dev.txt) ({note})",
        )
        assert _failure(tmp_path, instance, {"data_dir": str(data)}) == (
            "InputError",
            f"eval_questions run config: MetaQA QA file not found: {data}/metaqa/1-hop/vanilla/qa_test.txt "
            f"(set `data_dir` or GRAPHWALK_DATA_DIR) ({note})",
        )
        assert _failure(tmp_path, instance, {"data_dir": str(data), "split": "test"}) == (
            "InputError",
            f"eval_questions run config: MetaQA QA file not found: {data}/metaqa/1-hop/vanilla/qa_test.txt "
            "(set `data_dir` or GRAPHWALK_DATA_DIR)",
        )
        (data / "metaqa" / "kb.txt").unlink()
        (data / "metaqa" / "1-hop" / "vanilla" / "qa_test.txt").write_text(
            FILES["metaqa/1-hop/vanilla/qa_dev.txt"]
        )
        (data / "metaqa" / "1-hop" / "qa_test_qtype.txt").write_text(FILES["metaqa/1-hop/qa_dev_qtype.txt"])
        assert _failure(tmp_path, instance, {"data_dir": str(data)}) == (
            "InputError",
            f"eval_questions run config: MetaQA KB not found: {data}/metaqa/kb.txt "
            "(set `data_dir` or GRAPHWALK_DATA_DIR)",
        )
        (data / "metaqa" / "kb.txt").write_text(FILES["metaqa/kb.txt"])
        (data / "metaqa" / "1-hop" / "vanilla" / "qa_test.txt").write_text("no tab here\n")
        assert _failure(tmp_path, instance, {"data_dir": str(data)}) == (  # there, and malformed: no note
            "InputError",
            f"{data}/metaqa/1-hop/qa_test_qtype.txt: 2 lines but {data}/metaqa/1-hop/vanilla/qa_test.txt "
            "has 1; they must pair up",
        )


#: A hub QA dataset in its own layout (a column mapping is needed): two questions over four documents.
QA_REPO = "tests/qa-docs"
QA_ROWS = [
    {
        "qid": "a",
        "q": "Which river flows through Arlen?",
        "answer": ["Vosk"],
        "docs": [
            {"name": "Arlen", "body": "Arlen is a town on the river Vosk."},
            {"name": "Bremm", "body": "Bremm is a village in the hills."},
        ],
        "gold": ["Arlen"],
    },
    {
        "qid": "b",
        "q": "Who founded the village of Bremm?",
        "answer": ["Ida Kell"],
        "docs": [
            {"name": "Bremm", "body": "Bremm is a village in the hills."},
            {"name": "Ida Kell", "body": "Ida Kell founded the village of Bremm."},
            {"name": "Vosk", "body": "The Vosk is a river."},
        ],
        "gold": ["Ida Kell", "Bremm"],
    },
]
QA_COLUMNS = {"id": "qid", "question": "q", "passages": "docs", "title": "name", "text": "body"}


def test_hf_partition_reads_any_hub_dataset_through_a_column_mapping(
    hub_server: HubServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    import datasets.config

    hub_server.add_repo(QA_REPO, SHA, {"data/test.jsonl": "".join(json.dumps(r) + "\n" for r in QA_ROWS)})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    hf = {
        "repo": f"{QA_REPO}@{SHA}",
        "split": "test",
        "columns": {**QA_COLUMNS, "answers": "answer", "supporting": "gold"},
    }
    run_config = {
        "ops": {
            "eval_questions": {"config": {"hf": hf, "hub_endpoint": hub_server.endpoint, "n": None}},
            "eval_results": {"config": {"concurrency": 1}},
        }
    }
    root = tmp_path / "warehouse"
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [eval_questions, eval_results],
            partition_key=eval_key("hf", "dense"),
            resources={
                "warehouse": WarehouseResource(root=str(root)),
                "decider": DeciderResource(backend="fake"),
                "llm": LLMResource(),
                "embedder": EmbedderResource(model_path="hashing"),
            },
            run_config=run_config,
            instance=instance,
        )
        assert result.success
        dataset = result.output_for_node("eval_questions")
    assert (dataset.name, dataset.info["hub"], dataset.info["split"]) == (
        "hf",
        f"{QA_REPO}@{SHA}",
        "test",
    )
    assert [(q.id, q.gold, q.extra["supporting"]) for q in dataset.questions] == [
        ("a", ["Vosk"], ["Arlen"]),
        ("b", ["Ida Kell"], ["Ida Kell", "Bremm"]),
    ]
    assert [p.id for p in dataset.knowledge.passages] == ["Arlen", "Bremm", "Ida Kell", "Vosk"]
    assert f"/datasets/{QA_REPO}/resolve/{SHA}/data/test.jsonl" in {r.path for r in hub_server.requests}
    rows = warehouse_rows(
        root,
        "select dataset, system, question_id, status, recall_at_2, all_supporting_at_10 "
        "from eval_results order by question_id",
    )
    assert rows == [("hf", "dense", "a", "ok", 1.0, 1.0), ("hf", "dense", "b", "ok", 1.0, 1.0)]


def test_hf_partition_without_its_hub_split_says_what_to_configure(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"the 'hf' dataset needs its hub split in the run config: hf: \{repo"
    ):
        load_partition_dataset("hf", Warehouse(tmp_path), n=None)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"split": "test", "dataset": "hotpotqa"},
            "eval_questions run config: hotpotqa has dev questions only in the data folder "
            "(hotpotqa/hotpotqa_dev_ircotfmt_300.jsonl): `split`=test needs a question file of that split "
            "(`questions`)",
        ),
        (
            {"hub": "not-a-ref"},
            "eval_questions run config: `hub` expects REPO@SHA (e.g. owner/name@<40-hex commit sha>), "
            "got 'not-a-ref'",
        ),
        (
            {"hub_endpoint": "http://127.0.0.1:9"},
            "eval_questions run config: `hub_endpoint` needs `hub` (REPO@SHA)",
        ),
        (
            {"hub": f"{REPO}@{SHA}", "data_dir": "/data"},
            "eval_questions run config: `data_dir` and `hub` are mutually exclusive: read local files or "
            "a hub repo",
        ),
        (
            {"hf": {"repo": "not-a-ref"}},
            "eval_questions run config: `hf.repo` expects REPO@SHA (e.g. owner/name@<40-hex commit sha>), "
            "got 'not-a-ref'",
        ),
    ],
)
def test_eval_questions_config_errors_name_the_config_fields(
    tmp_path: Path, config: dict[str, object], message: str
) -> None:
    """A bad run-config value is named as the eval_questions field, not as a CLI flag (``--hub``)."""
    config = dict(config)
    dataset = str(config.pop("dataset", "hf" if "hf" in config else "metaqa-1hop"))
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [eval_questions],
            partition_key=eval_key(dataset, "relation-greedy"),
            resources={"warehouse": WarehouseResource(root=str(tmp_path / "warehouse"))},
            run_config={"ops": {"eval_questions": {"config": config}}},
            instance=instance,
            raise_on_error=False,
        )
    (failure,) = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert (error.cause.cls_name, error.cause.message.strip()) == (
        "InputError",
        f"graphwalk_core.errors.InputError: {message}",
    )


def test_a_hotpotqa_partition_reads_the_question_file_it_is_given(tmp_path: Path) -> None:
    """``questions`` gives a HotpotQA (or 2Wiki) partition another split's file, labelled as asked."""
    from conftest import shared_path

    dev = shared_path("data", "hotpotqa", "hotpotqa_dev_ircotfmt_300.jsonl")
    given = load_partition_dataset("hotpotqa", Warehouse(tmp_path), n=3, split="test", questions=str(dev))
    shared = load_partition_dataset("hotpotqa", Warehouse(tmp_path), n=3)
    assert (given.split, shared.split) == ("test", "dev")
    assert [q.id for q in given.questions] == [q.id for q in shared.questions]


def test_one_run_config_with_questions_serves_every_demo_partition(tmp_path: Path) -> None:
    """The demo (and a backfill) gives every eval_questions partition one run config: ``questions`` is
    custom's file and the MetaQA partitions ignore it (refusing it broke ``make demo``)."""
    from conftest import shared_path

    shared_path("data", "metaqa", "kb.txt")  # skips without ../shared
    questions = Path(__file__).resolve().parents[2] / "data" / "questions.jsonl"
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [eval_questions],
            partition_key=eval_key("metaqa-1hop", "relation-greedy"),
            resources={"warehouse": WarehouseResource(root=str(tmp_path / "warehouse"))},
            run_config={"ops": {"eval_questions": {"config": {"n": 2, "questions": str(questions)}}}},
            instance=instance,
        )
    dataset = result.output_for_node("eval_questions")
    assert (dataset.name, dataset.split, len(dataset.questions)) == ("metaqa-1hop", "test", 2)
