"""Start the Dagster UI from workspace.yaml, query its GraphQL API, drive a backfill, stop it.

Used by the UI test and runnable by hand: ``python -m graphwalk_dagster.ui_check`` prints every
asset with its partition keys, as the webserver lists them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]

ASSETS_QUERY = """
{ assetNodes { assetKey { path } isPartitioned partitionKeys } }
"""

LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on UnauthorizedError { message }
    ... on PartitionSetNotFoundError { message }
  }
}
"""

BACKFILL_STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status numPartitions runs(limit: 50) { runId status } }
    ... on PythonError { message }
  }
}
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare_home(home: Path) -> Path:
    """A DAGSTER_HOME holding the repository's instance config (telemetry off)."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    return home


def start_webserver(
    port: int, env: dict[str, str], *, workspace: Path | None = None
) -> subprocess.Popen[bytes]:
    """``dagster-webserver -w workspace.yaml`` in its own process group (so it can be killed whole)."""
    cmd = [
        str(Path(sys.executable).with_name("dagster-webserver")),
        "-w",
        str(workspace or REPO_ROOT / "workspace.yaml"),
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
    ]
    return subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env={**os.environ, "DAGSTER_DISABLE_TELEMETRY": "1", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Terminate the process group, then kill it if it lingers."""
    if proc.poll() is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=timeout)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
    if proc.stderr:
        proc.stderr.close()


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST one GraphQL request; errors in the reply raise RuntimeError."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        reply = json.loads(resp.read())
    if reply.get("errors"):
        raise RuntimeError(f"GraphQL errors: {reply['errors']}")
    return reply["data"]


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 45.0) -> None:
    """Wait until the webserver answers GraphQL with the code location loaded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"dagster-webserver exited with {proc.returncode}: {err[-2000:]}")
        try:
            if graphql(url, ASSETS_QUERY)["assetNodes"]:
                return
        except (urllib.error.URLError, ConnectionError, RuntimeError, TimeoutError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"dagster-webserver at {url} not ready after {timeout:.0f}s")


def asset_partitions(url: str) -> dict[str, list[str] | None]:
    """Every asset the UI lists, with its partition keys (None when it is not partitioned)."""
    nodes = graphql(url, ASSETS_QUERY)["assetNodes"]
    return {
        "/".join(n["assetKey"]["path"]): list(n["partitionKeys"]) if n["isPartitioned"] else None
        for n in nodes
    }


def launch_backfill(url: str, assets: list[str], partitions: list[str]) -> str:
    """Launch a backfill of ``partitions`` of ``assets`` through the UI's GraphQL API; its id."""
    params = {"assetSelection": [{"path": a.split("/")} for a in assets], "partitionNames": partitions}
    result = graphql(url, LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"backfill launch failed: {result}")
    return str(result["backfillId"])


def backfill_status(url: str, backfill_id: str) -> dict[str, Any]:
    return graphql(url, BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]


def run_backfill_daemon(workspace: Path, until_done: str, url: str, timeout: float = 60.0) -> dict[str, Any]:
    """Run Dagster's backfill and run-queue daemon iterations in process until ``until_done`` finishes.

    This is what ``dagster-daemon`` does on its 30 s loop, run back to back so a test waits seconds.
    """
    import logging

    from dagster import DagsterInstance
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster._daemon.backfill import execute_backfill_iteration
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

    logger = logging.getLogger("graphwalk.backfill")
    deadline = time.monotonic() + timeout
    with (
        DagsterInstance.get() as instance,
        WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(workspace)])) as context,
    ):
        queue = QueuedRunCoordinatorDaemon(interval_seconds=1)
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            list(execute_backfill_iteration(context, logger))
            list(queue.run_iteration(context))
            status = backfill_status(url, until_done)
            if status.get("status") in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED"):
                return status
            time.sleep(0.5)
    raise TimeoutError(f"backfill {until_done} not finished after {timeout:.0f}s: {status}")


def main(argv: list[str] | None = None) -> None:
    """Start the UI on a free port over $DAGSTER_HOME (else a throwaway instance) and print what it
    lists: the partitions a source sensor or the demo registered are in the instance."""
    description = " ".join((main.__doc__ or "").split())
    argparse.ArgumentParser(prog="ui_check", description=description).parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        given = os.environ.get("DAGSTER_HOME")
        home = Path(given) if given else prepare_home(Path(tmp) / "dagster_home")
        print(f"instance: {home}" + ("" if given else " (throwaway: set DAGSTER_HOME for yours)"))
        port = free_port()
        proc = start_webserver(port, {"DAGSTER_HOME": str(home)})
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(url, proc)
            for asset, keys in sorted(asset_partitions(url).items()):
                if keys is None:
                    print(f"{asset}: not partitioned")
                else:
                    print(f"{asset}: {len(keys)} partition(s) {keys[:8]}{' ...' if len(keys) > 8 else ''}")
        finally:
            stop(proc)


if __name__ == "__main__":
    main()
