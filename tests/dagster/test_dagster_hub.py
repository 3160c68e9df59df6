"""The eval_questions asset reads a dataset repo pinned to a commit (config ``hub``) over HTTP."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from huggingface_hub import constants
from servers.hf_hub_server import HubServer, hub_server  # noqa: F401

from graphwalk_dagster.defs.eval.assets import eval_questions
from graphwalk_dagster.defs.eval.partitions import eval_key
from graphwalk_dagster.defs.shared.resources import WarehouseResource

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
    config = {"hub": f"{REPO}@{SHA}", "hub_endpoint": hub_server.endpoint, "n": None}
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [eval_questions],
            partition_key=eval_key("metaqa-1hop", "relation-greedy"),
            resources={"warehouse": WarehouseResource(root=str(tmp_path / "warehouse"))},
            run_config={"ops": {"eval_questions": {"config": config}}},
            instance=instance,
        )
        assert result.success
        dataset = result.output_for_node("eval_questions")
    assert [(q.text, q.gold) for q in dataset.questions] == [
        ("who directed Heat", ["Michael Mann"]),
        ("who directed Ronin", ["John Frankenheimer"]),
    ]
    snapshot = tmp_path / "cache" / "datasets--tests--metaqa-mini" / "snapshots" / SHA
    assert dataset.knowledge.kb_path == snapshot / "metaqa" / "kb.txt"
