"""docs/deploy.md's code blocks as the tests read them, and a Celery worker built from the doc's app.

``celery -A deploy_doc worker`` (with this folder on ``PYTHONPATH``) starts the doc's Celery app on
kombu's ``filesystem://`` transport: ``CELERY_TEST_BROKER_DIR`` holds the queues, and
``CELERY_TEST_RESULTS`` names the result backend. ``tiny_job`` is a two-asset job on the Celery
executor with the same settings, for a run without any server.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import dagster as dg

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


def fenced(heading: str, lang: str) -> list[tuple[int, str]]:
    """The ``lang`` code blocks under the ``## heading`` section of the doc, with their first line."""
    text = DOC.read_text(encoding="utf-8")
    start = text.find(f"\n## {heading}\n")
    if start < 0:
        raise LookupError(f"{DOC}: no section '## {heading}'")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end > 0 else len(text)]
    first_line = text[:start].count("\n") + 2
    return [
        (first_line + section[: m.start(1)].count("\n"), m.group(1))
        for m in re.finditer(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    ]


def section_text(heading: str) -> str:
    """The prose and code of the ``## heading`` section."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def run_block(line: int, source: str) -> dict[str, Any]:
    """Execute a Python block of the doc; tracebacks name docs/deploy.md and the block's line."""
    namespace: dict[str, Any] = {"__name__": f"deploy_md_line_{line}"}
    exec(compile("\n" * (line - 1) + source, str(DOC), "exec"), namespace)
    return namespace


def transport_options() -> dict[str, str]:
    """The filesystem transport's folders (queues and exchange bindings) under CELERY_TEST_BROKER_DIR."""
    root = Path(os.environ["CELERY_TEST_BROKER_DIR"])
    return {
        "data_folder_in": str(root / "queues"),
        "data_folder_out": str(root / "queues"),
        "control_folder": str(root / "control"),
    }


def _worker_app() -> Any:
    """The doc's Celery app, on the test broker and result backend."""
    line, source = fenced("Celery (dagster-celery)", "python")[1]
    celery_app = run_block(line, source)["app"]
    celery_app.conf.broker_transport_options = transport_options()
    celery_app.conf.result_backend = os.environ["CELERY_TEST_RESULTS"]
    return celery_app


@dg.asset
def step_one() -> int:
    """The pid of the process that ran this step."""
    return os.getpid()


@dg.asset
def step_two(step_one: int) -> list[int]:
    """The pids of the processes that ran both steps."""
    return [step_one, os.getpid()]


def tiny_job() -> dg.JobDefinition:
    """Two assets on the Celery executor configured like the doc's job (broker from the env)."""
    from dagster_celery import celery_executor

    executor = celery_executor.configured(
        {
            "broker": {"env": "CELERY_BROKER_URL"},
            "backend": os.environ["CELERY_TEST_RESULTS"],
            "include": ["graphwalk_dagster"],
            "config_source": {"broker_transport_options": transport_options()},
        }
    )
    defs = dg.Definitions(
        assets=[step_one, step_two],
        jobs=[dg.define_asset_job("tiny_on_celery")],
        resources={"io_manager": dg.FilesystemIOManager(base_dir=os.environ["CELERY_TEST_IO_DIR"])},
        executor=executor,
    )
    return defs.resolve_job_def("tiny_on_celery")


if "CELERY_TEST_BROKER_DIR" in os.environ and "CELERY_TEST_WORKER" in os.environ:
    app = _worker_app()
