"""Done-when: a gold-path decider reaches MetaQA's relation-path answerability ceiling in relation mode.

The ceiling is computed independently by a plain set BFS along each question's gold relation path
(derived from its qtype); the engine's top answer must score exactly the same F1 per hop count.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import shared_path

from graphwalk_core.decisions.fake import FakeDecisionBackend
from graphwalk_core.eval.datasets.metaqa import load_metaqa
from graphwalk_core.eval.metrics import f1_score
from graphwalk_core.stores.memory import MemoryGraphStore
from graphwalk_core.stores.triples import read_triples
from graphwalk_core.traversal.answers import follow_relation_path, metaqa_relation_path
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .conftest import gold_path_script

SAMPLE = 300


@pytest.fixture(scope="module")
def metaqa_kb() -> MemoryGraphStore:
    kb = shared_path("data", "metaqa", "kb.txt")
    return MemoryGraphStore.from_triples(read_triples(kb), source_id="metaqa/kb")


def test_qtype_paths() -> None:
    assert metaqa_relation_path("movie_to_director") == [("directed_by", "out")]
    assert metaqa_relation_path("director_to_movie") == [("directed_by", "in")]
    assert metaqa_relation_path("actor_to_movie_to_writer") == [
        ("starred_actors", "in"),
        ("written_by", "out"),
    ]
    assert metaqa_relation_path("movie_to_tags") == [("has_tags", "out")]
    with pytest.raises(ValueError, match="unknown entity kind 'studio'"):
        metaqa_relation_path("movie_to_studio")


@pytest.mark.shared
@pytest.mark.parametrize("hops", [1, 2, 3])
async def test_gold_path_decider_reaches_the_ceiling(metaqa_kb: MemoryGraphStore, hops: int) -> None:
    data = shared_path("data")
    questions = load_metaqa(hops, split="dev", data_dir=Path(data)).questions
    sample = random.Random(20261130).sample(questions, SAMPLE)
    config = TraversalConfig(hop_mode="relation", allow_stop_at_start=False, max_frontier=1_000_000)
    engine_f1, ceiling_f1, mismatches = 0.0, 0.0, []
    for q in sample:
        assert q.qtype is not None and q.topic is not None
        path = metaqa_relation_path(q.qtype)
        decider = FakeDecisionBackend(script=gold_path_script(path))
        result = await Traverser(metaqa_kb, decider, config=config).walk(q.text, [q.topic])
        assert result.status == "ok", result.error or result.abort_reason
        walked = f1_score(result.answers[0].names, q.gold)
        ceiling = f1_score(sorted(await follow_relation_path(metaqa_kb, [q.topic], path)), q.gold)
        engine_f1 += walked
        ceiling_f1 += ceiling
        if walked != ceiling:
            mismatches.append(q.id)
    assert mismatches == []
    assert engine_f1 == ceiling_f1
    assert ceiling_f1 / SAMPLE > {1: 0.95, 2: 0.99, 3: 0.99}[hops]
