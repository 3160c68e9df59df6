"""The trained decider: fit on weak labels, full distributions, model folder, embedder check, factory."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import shutil
from pathlib import Path

import forked_jobs
import numpy as np
import pytest

from graphwalk_core.decisions import ChoiceQuestion, DecisionRequest
from graphwalk_core.decisions.base import model_fingerprint
from graphwalk_core.decisions.factory import make_decider
from graphwalk_core.decisions.trained import DeciderModel, TrainedDecisionBackend, question_key
from graphwalk_core.embeddings.hashing import HashingEmbedder
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import GraphwalkSettings
from graphwalk_core.training.examples import weak_examples
from graphwalk_core.training.fit import FitConfig, fit_decider
from graphwalk_core.traversal import prompts
from graphwalk_core.traversal.config import TraversalConfig
from graphwalk_core.traversal.engine import Traverser

from .kb import directed, films_of_director, questions, store, year

EMBEDDER = HashingEmbedder(dim=64)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    examples, unlabeled = asyncio.run(weak_examples(store(), questions(range(9))))
    assert unlabeled == 0
    out = tmp_path_factory.mktemp("model") / "tiny"
    report = fit_decider(
        examples, EMBEDDER, config=FitConfig(hidden=(16,), max_iter=200, name="tiny"), out=out
    )
    assert report.examples["examples"] == len(examples) == 9 * 7
    assert report.train_accuracy["all"] == 1.0
    return out


def relation_question(path: list[str], options: dict[str, object], start: str = "Film 10") -> ChoiceQuestion:
    return ChoiceQuestion(
        key="b0",
        instructions=prompts.instructions("relation", path, [start], 1, start=[start]),
        options=options,
    )


def rel(relation: str, direction: str = "out") -> dict[str, object]:
    return prompts.relation_option(relation, direction, ["x"], 1, glosses={})  # type: ignore[arg-type]


def test_manifest_records_what_it_was_trained_on(model_dir: Path) -> None:
    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert manifest["format"] == "graphwalk-trained-decider/4"
    assert manifest["embedder"] == EMBEDDER.model_id
    assert manifest["relations"] == ["directed_by", "release_year", "starred_actors"]
    assert set(manifest["libraries"]) == {"scikit-learn", "numpy", "graphwalk"}
    assert manifest["counts"]["source_weak"] == 63 and manifest["counts"]["source_trace"] == 0
    assert len(manifest["data_hash"]) == 64
    assert set(manifest["validation_accuracy"]) == {"first", "later", "stop", "all"}
    learned = json.loads((model_dir / "questions.json").read_text())
    assert learned == sorted(question_key(q.id, q.text) for q in questions(range(9)))
    assert learned[0] == "dir-0#" + hashlib.sha256(b"who directed Film 0").hexdigest()[:12]
    assert DeciderModel.load(model_dir).questions == tuple(learned)


def test_the_leak_guard_checks_the_questions_the_model_learned_from_not_todays_examples(
    model_dir: Path, tmp_path: Path
) -> None:
    """decision_examples re-materialized after training (other questions) does not move the guard: it
    refuses what the newest model learned from and lets through what it did not; a model folder saved
    before models listed their questions falls back to decision_examples."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
    from graphwalk_core.training.store import EXAMPLES, learned_questions
    from graphwalk_core.warehouse.models import mark_latest, model_folder
    from graphwalk_core.warehouse.tables import PART_FILE, Warehouse

    wh = Warehouse(tmp_path / "warehouse")
    folder = model_folder(wh, "0123456789ab")
    shutil.copytree(model_dir, folder)
    mark_latest(wh, folder)
    examples = wh.partition_dir(EXAMPLES, None) / PART_FILE
    examples.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"question_id": ["dir-20", "year-20"]}), examples)  # examples since changed
    texts = {q.id: q.text for q in questions(range(21))}
    asked = [Question(id=i, text=texts[i], gold=[]) for i in ("dir-20", "dir-3", "year-5", "year-20")]
    dataset = Dataset(name="d", split="dev", questions=asked, knowledge=Knowledge(graph="triples"))
    assert learned_questions(wh, [dataset]) == ["dir-3", "year-5"]
    (folder / "questions.json").unlink()
    assert learned_questions(wh, [dataset]) == ["dir-20", "year-20"]


def test_only_a_model_reaching_the_validation_floor_becomes_the_newest(tmp_path: Path) -> None:
    """``promote`` points LATEST at a model whose validation accuracy reaches the floor (0.8); one below it,
    or with no validation question (unknown), is left out and LATEST keeps the earlier model."""
    from graphwalk_core.training.store import promote
    from graphwalk_core.warehouse.models import latest_model, model_folder
    from graphwalk_core.warehouse.tables import Warehouse

    wh = Warehouse(tmp_path / "warehouse")
    made = []
    for name, accuracy in (("a", 0.8), ("b", 0.79), ("c", None), ("d", 0.95)):
        folder = model_folder(wh, name * 12)
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"validation_accuracy": {"all": accuracy}}))
        made.append((promote(wh, folder), latest_model(wh).name))  # type: ignore[union-attr]
    assert made == [(True, "a" * 12), (False, "a" * 12), (False, "a" * 12), (True, "d" * 12)]


def test_the_leak_guard_tells_another_datasets_question_with_a_learned_id_apart(
    model_dir: Path, tmp_path: Path
) -> None:
    """Custom question files number their questions (q00001, q00002, … or the user's 1, 2, 3): a model
    lists each learned question by id and text, so another file's question that reuses a learned id is
    scored, not refused (before: every question of a second file was "one it learned from"); the same
    question (id and text) is still refused, and a folder listing plain ids (saved before keys) by id."""
    from graphwalk_core.eval.datasets.base import Dataset, Knowledge, Question
    from graphwalk_core.training.store import learned_questions
    from graphwalk_core.warehouse.tables import Warehouse

    asked = [
        Question(id="dir-3", text="who directed Film 3", gold=[]),  # learned
        Question(id="dir-4", text="who wrote Book 4", gold=[]),  # another file's question numbered alike
    ]
    dataset = Dataset(name="custom", split="dev", questions=asked, knowledge=Knowledge(graph="triples"))
    wh = Warehouse(tmp_path / "warehouse")
    assert learned_questions(wh, [dataset], model_dir) == ["dir-3"]
    old = tmp_path / "old"
    shutil.copytree(model_dir, old)
    (old / "questions.json").write_text(json.dumps(["dir-3", "dir-4"]))
    assert learned_questions(wh, [dataset], old) == ["dir-3", "dir-4"]


def test_a_model_whose_questions_are_unknown_saves_no_list(model_dir: Path, tmp_path: Path) -> None:
    """A folder saved before models kept their questions, loaded and saved again, still has no list (the
    leak guard then falls back to decision_examples): an empty list would say it learned from nothing.
    Saved over a folder holding another model's list, it removes that list."""
    from graphwalk_core.decisions.trained import learned_ids

    old = tmp_path / "old"
    shutil.copytree(model_dir, old)
    (old / "questions.json").unlink()
    model = DeciderModel.load(old)
    assert model.questions is None
    assert learned_ids(model.save(tmp_path / "copy")) is None
    assert not (tmp_path / "copy" / "questions.json").exists()
    over = tmp_path / "over"
    shutil.copytree(model_dir, over)
    model.save(over)
    assert learned_ids(over) is None
    assert DeciderModel.load(over).questions is None


async def test_full_distribution_over_every_option_and_stop(model_dir: Path) -> None:
    backend = TrainedDecisionBackend.load(model_dir, EMBEDDER)
    assert backend.model_id.startswith("trained:tiny@")
    options = {"o1": rel("directed_by"), "o2": rel("starred_actors"), "o3": rel("release_year")}
    response = await backend.decide(
        DecisionRequest(
            state=prompts.build_state("who directed Film 10"), questions=[relation_question([], options)]
        )
    )
    dist = response.results["b0"].probabilities
    assert list(dist) == ["o1", "o2", "o3"] and math.isclose(sum(dist.values()), 1.0)
    assert response.results["b0"].top == "o1"
    stop_options = {"o1": rel("directed_by", "in"), prompts.STOP: "STOP"}
    response = await backend.decide(
        DecisionRequest(
            state=prompts.build_state("who directed Film 10"),
            questions=[relation_question(["directed_by (out)"], stop_options)],
        )
    )
    assert response.results["b0"].top == prompts.STOP


async def test_unseen_relation_still_gets_a_distribution(model_dir: Path) -> None:
    backend = TrainedDecisionBackend.load(model_dir, EMBEDDER)
    options = {"o1": rel("directed_by"), "o2": rel("filmed_in_country"), prompts.STOP: "STOP"}
    response = await backend.decide(
        DecisionRequest(
            state=prompts.build_state("in which country was Film 10 filmed"),
            questions=[relation_question([], options)],
        )
    )
    dist = response.results["b0"].probabilities
    assert list(dist) == ["o1", "o2", "STOP"]
    assert all(0 < p < 1 for p in dist.values()) and math.isclose(sum(dist.values()), 1.0)


async def test_walks_unseen_films_with_the_trained_decider(model_dir: Path) -> None:
    backend = TrainedDecisionBackend.load(model_dir, EMBEDDER)
    config = TraversalConfig(hop_mode="relation", strategy="greedy", allow_stop_at_start=False)
    traverser = Traverser(store(), backend, config=config)
    for i in (9, 10, 11):  # never trained on
        film = f"Film {i}"
        cases = [
            (f"who directed {film}", directed(i)),
            (f"when was {film} released", year(i)),
            (f"which films share the director of {film}", [f for f in films_of_director(i % 4) if f != film]),
        ]
        for text, gold in cases:
            result = await traverser.walk(text, [film])
            assert sorted(result.answers[0].names) == sorted(gold), text


def test_save_load_round_trip(model_dir: Path, tmp_path: Path) -> None:
    model = DeciderModel.load(model_dir)
    again = DeciderModel.load(model.save(tmp_path / "copy"))
    x = np.random.default_rng(0).normal(size=(3, model.mean.shape[0])).astype(np.float32)
    assert np.array_equal(model.logits(x), again.logits(x))
    assert again.manifest == model.manifest
    assert again.fingerprint == model.fingerprint and len(model.fingerprint) == 64
    assert model_fingerprint(TrainedDecisionBackend(again, EMBEDDER)) == model.fingerprint


def test_refuses_a_model_of_another_embedder(model_dir: Path) -> None:
    other = HashingEmbedder(dim=32)
    with pytest.raises(ConfigError, match=r"trained with embedder 'hashing:64' but this run embeds"):
        TrainedDecisionBackend.load(model_dir, other)


def test_refuses_a_folder_that_is_no_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a trained decider"):
        TrainedDecisionBackend.load(tmp_path, EMBEDDER)
    (tmp_path / "manifest.json").write_text('{"format": "other"}')
    (tmp_path / "weights.npz").write_bytes(b"")
    with pytest.raises(ConfigError, match="format 'other'"):
        TrainedDecisionBackend.load(tmp_path, EMBEDDER)


@pytest.mark.parametrize("older", ["graphwalk-trained-decider/2", "graphwalk-trained-decider/3"])
def test_refuses_a_model_of_an_older_format(model_dir: Path, tmp_path: Path, older: str) -> None:
    """Format 2 (adjacent word pairs only) reads different terms than it was fitted on, format 3 has no
    path planner: retrain."""
    manifest = json.loads((model_dir / "manifest.json").read_text())
    manifest["format"] = older
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "weights.npz").write_bytes((model_dir / "weights.npz").read_bytes())
    expected = (
        rf"format '{older}', expected 'graphwalk-trained-decider/4' "
        r"\(features 'coverage-3'\): a model of an older graphwalk; retrain it"
    )
    with pytest.raises(ConfigError, match=expected):
        TrainedDecisionBackend.load(tmp_path, EMBEDDER)


def test_factory_builds_the_trained_decider(model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="GRAPHWALK_DECIDER_MODEL"):
        make_decider(GraphwalkSettings(decider="trained"), embedder=EMBEDDER)
    built = make_decider(GraphwalkSettings(decider="trained", decider_model=model_dir), embedder=EMBEDDER)
    assert isinstance(built, TrainedDecisionBackend)
    # the default stays the zero-shot local decider
    assert make_decider(GraphwalkSettings(), embedder=EMBEDDER).model_id.startswith("local:")


async def test_a_model_of_one_and_two_hop_questions_walks_a_composed_three_hop_one(tmp_path: Path) -> None:
    from graphwalk_core.training.examples import LabeledQuestion

    def years_of(films: list[str]) -> list[str]:
        return sorted({y for f in films for y in year(int(f.split()[1]))})

    labeled = questions(range(9))  # who directed / when released / films sharing the director
    for d in range(4):
        director = f"Director {d}"
        labeled.append(
            LabeledQuestion(
                f"years-{d}", f"when were the films directed by {director} released", [director],
                years_of(films_of_director(d)), "dev", [director],
            )
        )  # fmt: skip
    examples, unlabeled = await weak_examples(store(), labeled)
    assert unlabeled == 0 and max(len(ex.view.path) for ex in examples) == 2  # no 3-hop question
    config = FitConfig(hidden=(16,), max_iter=200, name="short")
    fit_decider(examples, EMBEDDER, config=config, out=tmp_path / "short")
    backend = TrainedDecisionBackend.load(tmp_path / "short", EMBEDDER)
    walk = TraversalConfig(hop_mode="relation", strategy="greedy", allow_stop_at_start=False)
    traverser = Traverser(store(), backend, config=walk)
    for i in (9, 10, 11):
        film = f"Film {i}"
        # the network alone (plan_weight=0) stops after the two hops of "share the director"
        result = await traverser.walk(
            f"the films that share the director of {film} were released when", [film]
        )
        others = [f for f in films_of_director(i % 4) if f != film]
        assert sorted(result.answers[0].names) == years_of(others), film


def test_refuses_a_cut_weights_file_or_a_manifest_that_is_no_object(model_dir: Path, tmp_path: Path) -> None:
    """A weights file cut short (a save that was killed) or a manifest that is valid JSON but no object is
    a ConfigError naming the file, not a BadZipFile or AttributeError traceback."""
    cut = tmp_path / "cut"
    shutil.copytree(model_dir, cut)
    data = (cut / "weights.npz").read_bytes()
    (cut / "weights.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigError, match=rf"^{cut / 'weights.npz'}: unreadable weights \(File is not a zip"):
        DeciderModel.load(cut)
    listed = tmp_path / "listed"
    shutil.copytree(model_dir, listed)
    (listed / "manifest.json").write_text("[]")
    with pytest.raises(ConfigError, match=rf"^{listed / 'manifest.json'}: not a JSON object$"):
        DeciderModel.load(listed)


def test_a_failed_save_over_another_model_leaves_no_model_of_both(model_dir: Path, tmp_path: Path) -> None:
    """Saving over a model folder, a save that fails after the weights are written (here a manifest value
    that is no JSON) leaves a folder that is no model, never the old manifest over the new weights and
    question list; a later save makes it a model again."""
    from dataclasses import replace

    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    old = DeciderModel.load(folder)
    new = replace(
        old,
        weights=tuple(2 * w for w in old.weights),
        manifest={**old.manifest, "unsaveable": object()},
        questions=("other-1",),
    )
    with pytest.raises(TypeError, match="not JSON serializable"):
        new.save(folder)
    with pytest.raises(ConfigError, match=r"not a trained decider \(needs manifest.json and weights.npz\)"):
        DeciderModel.load(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["questions.json", "weights.npz"]
    replace(new, manifest=old.manifest).save(folder)
    assert DeciderModel.load(folder).questions == ("other-1",)


def test_examples_that_never_take_a_move_are_an_input_error() -> None:
    """Examples whose every top choice is STOP (a trace of a walk that stopped at its start) label no move
    to learn: an InputError saying so, not a ValueError from inside the coverage model."""
    from graphwalk_core.decisions.views import DecisionView
    from graphwalk_core.errors import InputError
    from graphwalk_core.training.examples import DecisionExample

    view = DecisionView("where does ENTITY work", (), (("works_at", "out"), ("manages", "out"), None))
    stopped = [
        DecisionExample(f"t{i}.json", "train", "trace", "where does Alice work", view, (0.1, 0.2, 0.7))
        for i in range(3)
    ]
    with pytest.raises(InputError, match=r"^no decision example takes a move \(every top choice is STOP\)"):
        fit_decider(stopped, EMBEDDER, config=FitConfig(validation_fraction=0.0))


def test_a_model_whose_planner_weighs_nothing_scores_by_the_network_alone(model_dir: Path) -> None:
    # plan_weight=0: 0 * -inf gave NaN for every move the planner rules out, and the decider failed
    # with "invalid probabilities"
    from graphwalk_core.decisions.views import DecisionView

    loaded = DeciderModel.load(model_dir)
    model = dataclasses.replace(loaded, planner=dataclasses.replace(loaded.planner, weight=0.0))
    view = DecisionView(
        "who directed ENTITY", (("directed_by", "in"), ("directed_by", "in")), (("directed_by", "in"), None)
    )
    planned = model.planner.distribution(view.question, view.path, view.options)
    assert planned is not None and planned.tolist() == [-math.inf, 0.0]
    total = math.log(math.exp(0.5) + math.exp(0.2))
    assert model.combine(view, np.array([0.5, 0.2])).tolist() == pytest.approx(
        [0.5 - total, 0.2 - total], abs=1e-12
    )


def test_a_model_saved_by_two_processes_at_once_is_never_without_its_manifest(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two trainings of one model at once (``trained_decider`` materialized while ``graphwalk train``
    runs): the second found no manifest yet, then saved over the first's folder, removing its manifest
    after the first had made it the newest, so a run walking with the newest model meanwhile failed
    ("not a trained decider"). Saves of a model now take turns; the second finds it saved."""
    import time

    from graphwalk_core.decisions import trained
    from graphwalk_core.training.store import promote, save_model
    from graphwalk_core.warehouse.models import latest_model
    from graphwalk_core.warehouse.tables import Warehouse

    model, wh = DeciderModel.load(model_dir), Warehouse(tmp_path / "warehouse")
    writing = trained.write_text_atomic

    def slowly(text: str, path: Path) -> Path:  # widens the time a save holds no manifest
        if path.name == trained.QUESTIONS:
            time.sleep(0.2)
        return writing(text, path)

    saving = DeciderModel.save

    def later(self: DeciderModel, folder: Path) -> Path:  # looks for the manifest at once, saves later
        time.sleep(0.3)
        return saving(self, folder)

    monkeypatch.setattr(trained, "write_text_atomic", slowly)

    def train(i: int) -> None:
        if i == 1:
            DeciderModel.save = later  # type: ignore[method-assign]
        assert promote(wh, save_model(wh, model))
        until = time.monotonic() + 0.8
        while i == 0 and time.monotonic() < until:  # walking with the newest model meanwhile
            DeciderModel.load(latest_model(wh))  # type: ignore[arg-type]

    assert forked_jobs.at_once(train, 2) == [0, 0]
    assert DeciderModel.load(latest_model(wh)).fingerprint == model.fingerprint  # type: ignore[arg-type]
