"""Datasets from a Hugging Face dataset repo pinned to a commit, over HTTP from a local hub server."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import constants
from servers.hf_hub_server import HubServer, hub_server  # noqa: F401
from typer.testing import CliRunner

from graphwalk_core.cli import app
from graphwalk_core.errors import ConfigError, InputError
from graphwalk_core.eval.datasets import load_dataset
from graphwalk_core.eval.datasets.hub import HubRef, check_revision, fetch_data_dir
from graphwalk_core.eval.datasets.registry import data_files

REPO = "tests/metaqa-mini"
SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
QA_DEV = "metaqa/1-hop/vanilla/qa_dev.txt"
QTYPE_DEV = "metaqa/1-hop/qa_dev_qtype.txt"
KB = "metaqa/kb.txt"
FILES = {
    "README.md": "A tiny MetaQA in the ../shared/data layout.\n",
    KB: "Heat|directed_by|Michael Mann\nHeat|release_year|1995\nRonin|directed_by|John Frankenheimer\n",
    QA_DEV: "who directed [Heat]\tMichael Mann\nwhen was [Heat] released\t1995\n"
    "who is the director of [Ronin]\tJohn Frankenheimer\n",
    QTYPE_DEV: "movie_to_director\nmovie_to_year\nmovie_to_director\n",
    "metaqa/2-hop/vanilla/qa_dev.txt": "who directed the films of [Michael Mann]\tMichael Mann\n",
    "metaqa/2-hop/qa_dev_qtype.txt": "director_to_movie_to_director\n",
}
LOCAL_FILES = "use local files instead: data_dir or GRAPHWALK_DATA_DIR (default ../shared/data)"
QUESTIONS = [
    ("metaqa-1hop-dev-00001", "who directed Heat", ["Michael Mann"], "movie_to_director", "Heat"),
    ("metaqa-1hop-dev-00002", "when was Heat released", ["1995"], "movie_to_year", "Heat"),
    (
        "metaqa-1hop-dev-00003",
        "who is the director of Ronin",
        ["John Frankenheimer"],
        "movie_to_director",
        "Ronin",
    ),
]


@pytest.fixture
def hub(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> HubServer:  # noqa: F811
    """The server holding REPO at SHA, with the hub client online (tests run with HF_HUB_OFFLINE=1)."""
    hub_server.add_repo(REPO, SHA, FILES)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return hub_server


def _calls(server: HubServer) -> Counter[tuple[str, str]]:
    return Counter((r.method, r.path) for r in server.requests)


def test_metaqa_from_a_pinned_hub_repo(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = data_files("metaqa-1hop")
    assert files == [QA_DEV, QTYPE_DEV, KB]
    cache = tmp_path / "cache"
    root = fetch_data_dir(HubRef.parse(f"{REPO}@{SHA}"), files, endpoint=hub.endpoint, cache_dir=cache)
    assert root == cache / "datasets--tests--metaqa-mini" / "snapshots" / SHA
    ds = load_dataset("metaqa-1hop", data_dir=root)
    assert [(q.id, q.text, q.gold, q.qtype, q.topic) for q in ds.questions] == QUESTIONS
    assert ds.knowledge.kb_path == root / KB
    assert ds.knowledge.kb_path.read_text() == FILES[KB]
    # only the requested files were listed once and fetched (HEAD for metadata, then GET)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == sorted(files)
    resolve = f"/datasets/{REPO}/resolve/{SHA}/"
    assert _calls(hub) == Counter(
        {("GET", f"/api/datasets/{REPO}/tree/{SHA}"): 1}
        | {(m, resolve + f): 1 for f in files for m in ("HEAD", "GET")}
    )
    assert hub.requests[0].query == {"recursive": ["true"], "expand": ["false"]}
    # offline, the pinned snapshot loads again from the cache without a request
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    before = len(hub.requests)
    again = fetch_data_dir(HubRef.parse(f"{REPO}@{SHA}"), files, endpoint=hub.endpoint, cache_dir=cache)
    assert (again, len(hub.requests)) == (root, before)


def test_revisions_must_be_full_commit_shas(hub: HubServer, tmp_path: Path) -> None:
    for bad in ("main", "v1.0", SHA[:7], SHA.upper(), SHA + "0"):
        with pytest.raises(InputError, match="is not a full 40-hex commit sha") as info:
            HubRef.parse(f"{REPO}@{bad}")
        assert f"hub revision {bad!r}" in str(info.value) and "reproducible" in str(info.value)
    for bad_ref in (REPO, f"@{SHA}", f"a/b/c@{SHA}"):
        with pytest.raises(InputError, match=r"^hub expects REPO@SHA"):
            HubRef.parse(bad_ref)
    assert check_revision(SHA) == SHA
    assert str(HubRef.parse(f" {REPO}@{SHA} ")) == f"{REPO}@{SHA}"
    # a ref built directly is checked too, before any request
    with pytest.raises(InputError, match="'main' is not a full"):
        fetch_data_dir(HubRef(REPO, "main"), [KB], endpoint=hub.endpoint, cache_dir=tmp_path)
    assert hub.requests == []


def test_offline_error_says_what_was_tried_and_how_to_use_local_files(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError) as info:
        fetch_data_dir(HubRef(REPO, SHA), [KB], endpoint=hub.endpoint, cache_dir=tmp_path)
    assert str(info.value) == (
        f"cannot fetch dataset repo {REPO}@{SHA} at {hub.endpoint}: offline mode is on (HF_HUB_OFFLINE) and "
        f"the snapshot is not in the hub cache; unset HF_HUB_OFFLINE to download it, or {LOCAL_FILES}"
    )
    assert hub.requests == []


def test_unreachable_hub_and_wrong_repos(hub: HubServer, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ConfigError) as info:
        fetch_data_dir(HubRef(REPO, SHA), [KB], endpoint=closed, cache_dir=tmp_path)
    assert str(info.value) == (
        f"cannot fetch dataset repo {REPO}@{SHA} at {closed}: ConnectionRefusedError: [Errno 111] "
        f"Connection refused; {LOCAL_FILES}"
    )
    other_sha = "0" * 40
    with pytest.raises(
        InputError, match=f"{REPO}@{other_sha} at .*: RevisionNotFoundError \\(check the repo"
    ):
        fetch_data_dir(HubRef(REPO, other_sha), [KB], endpoint=hub.endpoint, cache_dir=tmp_path)
    with pytest.raises(InputError, match=f"nobody/nothing@{SHA} at .*: RepositoryNotFoundError"):
        fetch_data_dir(HubRef("nobody/nothing", SHA), [KB], endpoint=hub.endpoint, cache_dir=tmp_path)
    hub.add_repo("tests/partial", SHA, {KB: FILES[KB]})
    with pytest.raises(InputError) as info:
        fetch_data_dir(
            HubRef("tests/partial", SHA), data_files("metaqa-1hop"), endpoint=hub.endpoint, cache_dir=tmp_path
        )
    assert str(info.value) == (
        f"dataset repo tests/partial@{SHA} has no {QA_DEV}, {QTYPE_DEV} "
        "(it must hold the ../shared/data layout, e.g. metaqa/1-hop/vanilla/qa_dev.txt)"
    )


def test_cli_eval_metaqa_from_the_hub(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    runner = CliRunner()
    out = tmp_path / "out"
    base = ["eval", "metaqa", "--system", "relation-greedy", "--out", str(out)]
    args = [*base, "--hub", f"{REPO}@{SHA}", "--hub-endpoint", hub.endpoint, "--decider", "fake"]
    result = runner.invoke(app, [*args, "--embed-model-path", "hashing", "--quiet"])
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "results.parquet").to_pylist()
    assert [(r["question_id"], r["status"]) for r in table] == [(q[0], "ok") for q in QUESTIONS]
    assert (tmp_path / "cache" / "datasets--tests--metaqa-mini" / "snapshots" / SHA / KB).is_file()
    both = runner.invoke(app, [*base, "--hub", f"{REPO}@{SHA}", "--data-dir", str(tmp_path)])
    assert (both.exit_code, both.output) == (
        2,
        "error: --data-dir and --hub are mutually exclusive: read local files or a hub repo\n",
    )
    branch = runner.invoke(app, [*base, "--hub", f"{REPO}@main"])
    assert branch.exit_code == 2
    assert branch.output.startswith("error: hub revision 'main' is not a full 40-hex commit sha")
    endpoint_only = runner.invoke(app, [*base, "--hub-endpoint", hub.endpoint])
    assert (endpoint_only.exit_code, endpoint_only.output) == (
        2,
        "error: --hub-endpoint needs --hub (REPO@SHA)\n",
    )
