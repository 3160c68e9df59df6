"""docs/deploy.md's Kubernetes and Celery configuration, read from the doc, is what dagster-k8s and
dagster-celery accept: the instance yaml, the run pod it launches, both executors' config, and a
Celery run through the doc's worker app on a broker made of folders (no cluster, no server)."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import dagster as dg
import kubernetes
import pytest
import yaml
from dagster._config import process_config, resolve_to_config_type
from dagster._core.errors import DagsterInvalidConfigError
from dagster._core.instance.config import dagster_instance_config
from dagster._core.system_config.objects import ResolvedRunConfig
from dagster._serdes.config_class import ConfigurableClassData
from dagster_k8s import k8s_job_executor
from dagster_k8s import launcher as k8s_launcher
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import construct_dagster_k8s_job
from deploy_doc import fenced, run_block, section_text

from graphwalk_dagster.definitions import defs

K8S = "Kubernetes (dagster-k8s)"
CELERY = "Celery (dagster-celery)"
HERE = Path(__file__).resolve().parent


def k8s_yaml() -> str:
    [(_, block)] = fenced(K8S, "yaml")
    return block


def instance_config(tmp_path: Path, text: str) -> dict[str, Any]:
    """``text`` validated as a dagster.yaml by Dagster's own instance loader."""
    (tmp_path / "dagster.yaml").write_text(text, encoding="utf-8")
    config, custom_class = dagster_instance_config(str(tmp_path))
    assert custom_class is None
    return dict(config)


def launcher_config(config: dict[str, Any]) -> dict[str, Any]:
    """The run launcher's config processed against K8sRunLauncher's schema (defaults filled in)."""
    result = process_config(resolve_to_config_type(k8s_launcher.K8sRunLauncher.config_type()), config)
    if not result.success:
        raise DagsterInvalidConfigError("K8sRunLauncher config", result.errors, config)
    return dict(result.value)


def test_k8s_instance_yaml_is_valid_instance_config(tmp_path: Path) -> None:
    config = instance_config(tmp_path, k8s_yaml())
    assert config["storage"] == {"postgres": {"postgres_url": {"env": "GRAPHWALK_DAGSTER_PG_URL"}}}
    assert config["run_queue"] == {
        "max_concurrent_runs": 8,
        "tag_concurrency_limits": [
            {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
        ],
    }
    assert "concurrency" not in config
    launcher = config["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s.launcher", "K8sRunLauncher")
    assert launcher_config(launcher["config"]) == {
        "job_image": "registry.example/graphwalk:2026-12-05",
        "service_account_name": "dagster",
        "instance_config_map": "dagster-instance",
        "postgres_password_secret": "dagster-postgresql-secret",
        "env_secrets": ["graphwalk-secrets"],
        "env_vars": ["GRAPHWALK_WAREHOUSE=/warehouse", "GRAPHWALK_SOURCES=/sources/sources.yaml"],
        "volume_mounts": [
            {"name": "warehouse", "mountPath": "/warehouse"},
            {"name": "sources", "mountPath": "/sources", "readOnly": True},
        ],
        "volumes": [
            {"name": "warehouse", "persistentVolumeClaim": {"claimName": "graphwalk-warehouse"}},
            {"name": "sources", "persistentVolumeClaim": {"claimName": "graphwalk-sources"}},
        ],
        "dagster_home": "/opt/dagster/dagster_home",
        "load_incluster_config": True,
        "kubeconfig_file": None,
        "k8s_api_ssl_ca_cert_file": None,
        "job_namespace": "default",
    }


def test_k8s_misspelled_keys_are_refused(tmp_path: Path) -> None:
    """The checks can fail: a misspelled launcher key, or instance key, is an error."""
    text = k8s_yaml()
    launcher = instance_config(tmp_path, text.replace("service_account_name", "service_acount_name"))
    with pytest.raises(DagsterInvalidConfigError) as error:
        launcher_config(launcher["run_launcher"]["config"])
    assert 'Received unexpected config entry "service_acount_name"' in str(error.value)
    with pytest.raises(DagsterInvalidConfigError, match='unexpected config entry "run_queues"'):
        instance_config(tmp_path, text.replace("run_queue:", "run_queues:"))


def test_k8s_run_pod_from_the_doc_launcher(tmp_path: Path) -> None:
    """The Kubernetes Job the launcher builds for a run (volumes, mounts, env, secrets, image). Without
    GRAPHWALK_SOURCES and a volume holding the sources, a run pod read the image's sample sources.yaml."""
    launcher = instance_config(tmp_path, k8s_yaml())["run_launcher"]
    data = ConfigurableClassData(launcher["module"], launcher["class"], yaml.safe_dump(launcher["config"]))
    with mock.patch.object(k8s_launcher, "load_kubernetes_config"):  # no cluster to load it from
        run_launcher = data.rehydrate(as_type=k8s_launcher.K8sRunLauncher)
    run = dg.DagsterRun(job_name="ingest_parallel", run_id="0123abcd-0000-0000-0000-000000000000")
    context = K8sContainerContext.create_for_run(run, run_launcher, include_run_tags=True)
    job = construct_dagster_k8s_job(
        context.get_k8s_job_config(job_image=None, run_launcher=run_launcher),
        args=["dagster", "api", "execute_run"],
        job_name="dagster-run-0123abcd",
        user_defined_k8s_config=context.run_k8s_config,
        component="run_worker",
    )
    pod = kubernetes.client.ApiClient().sanitize_for_serialization(job)["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert context.namespace == "default"
    assert pod["serviceAccountName"] == "dagster"
    assert pod["volumes"] == [
        {"name": "warehouse", "persistentVolumeClaim": {"claimName": "graphwalk-warehouse"}},
        {"name": "sources", "persistentVolumeClaim": {"claimName": "graphwalk-sources"}},
    ]
    assert container["volumeMounts"] == [
        {"name": "warehouse", "mountPath": "/warehouse"},
        {"name": "sources", "mountPath": "/sources", "readOnly": True},
    ]
    assert container["image"] == "registry.example/graphwalk:2026-12-05"
    assert container["envFrom"] == [{"secretRef": {"name": "graphwalk-secrets"}}]
    assert container["env"] == [
        {"name": "DAGSTER_HOME", "value": "/opt/dagster/dagster_home"},
        {
            "name": "DAGSTER_PG_PASSWORD",
            "valueFrom": {
                "secretKeyRef": {"key": "postgresql-password", "name": "dagster-postgresql-secret"}
            },
        },
        {"name": "GRAPHWALK_WAREHOUSE", "value": "/warehouse"},
        {"name": "GRAPHWALK_SOURCES", "value": "/sources/sources.yaml"},  # else the image's sample
    ]


def test_k8s_run_pod_gets_every_variable_the_instance_reads() -> None:
    """Each ``env:`` of the instance yaml is in ``env_vars`` or named as a key of the env secret."""
    text = k8s_yaml()
    read = set(re.findall(r"\benv: (\w+)", text))
    [secret_keys] = re.findall(r"env_secrets: \[[\w-]+\]\s+# (.+)", text)
    given = {name.strip() for name in secret_keys.split(",")}
    given |= {item.split("=")[0] for item in yaml.safe_load(text)["run_launcher"]["config"]["env_vars"]}
    assert read == {"GRAPHWALK_DAGSTER_PG_URL"}
    assert read <= given


def test_k8s_job_executor_config_in_the_prose() -> None:
    [execution] = re.findall(r"`(execution: \{.*?\})`", section_text(K8S))
    assert "`dagster_k8s.k8s_job_executor`" in section_text(K8S)
    config = yaml.safe_load(execution)["execution"]["config"]
    result = process_config(k8s_job_executor.config_schema.config_type, config)
    assert result.success, result.errors
    assert result.value == {
        "max_concurrent": 4,
        "job_namespace": "dagster",
        "volume_mounts": [],
        "volumes": [],
        "retries": {"enabled": {}},
        "per_step_k8s_config": {},
        "enable_owner_references": False,
    }
    wrong = process_config(k8s_job_executor.config_schema.config_type, {"max_concurent": 4})
    assert not wrong.success


def test_celery_job_from_the_doc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "pyamqp://guest@rabbitmq//")
    line, source = fenced(CELERY, "python")[0]
    job = run_block(line, source)["ingest_on_celery"]
    with dg.instance_for_test():
        job_def = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job])).resolve_job_def(job.name)
        run_config = ResolvedRunConfig.build(job_def, {})
    assert job_def.executor_def.name == "celery"
    assert run_config.execution.execution_engine_config == {
        "broker": "pyamqp://guest@rabbitmq//",
        "backend": "rpc://",
        "include": ["graphwalk_dagster"],
        "retries": {"enabled": {}},
    }
    assert {key.to_user_string() for key in job_def.asset_layer.executable_asset_keys} == {
        "source_profile",
        "source_documents",
        "chunks",
        "extractions",
        "routing_decisions",
        "graph_updates",
    }
    assert job_def.partitions_def is not None and job_def.partitions_def.name == "sources"


def test_celery_worker_app_from_the_doc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doc's app registers execute_plan and consumes the queue the executor sends steps to."""
    monkeypatch.setenv("CELERY_BROKER_URL", "pyamqp://guest@rabbitmq//")
    line, source = fenced(CELERY, "python")[1]
    app = run_block(line, source)["app"]
    assert "execute_plan" in app.tasks
    assert app.conf.broker_url == "pyamqp://guest@rabbitmq//"
    assert [queue.name for queue in app.conf.task_queues] == ["dagster"]
    assert app.conf.task_default_queue == "dagster"  # where the executor's steps go


def test_celery_run_through_the_doc_worker(tmp_path: Path) -> None:
    """A two-step run whose steps both execute in one worker started from the doc's app module."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "DAGSTER_HOME": str(home),
        "CELERY_BROKER_URL": "filesystem://",
        "CELERY_TEST_BROKER_DIR": str(tmp_path / "broker"),
        "CELERY_TEST_RESULTS": f"db+sqlite:///{tmp_path / 'results.sqlite'}",
        "CELERY_TEST_IO_DIR": str(tmp_path / "io"),
    }
    for folder in ("broker/queues", "broker/control", "io"):
        (tmp_path / folder).mkdir(parents=True)
    worker_cmd = [sys.executable, "-m", "celery", "-A", "deploy_doc", "worker", "--pool=solo", "-l", "info"]
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(worker_cmd, env={**env, "CELERY_TEST_WORKER": "1"}, stdout=log, stderr=log)
    try:
        launch = (
            "import dagster as dg, deploy_doc\n"
            "with dg.DagsterInstance.get() as instance:\n"
            "    result = dg.execute_job(dg.reconstructable(deploy_doc.tiny_job), instance)\n"
            "    print('run success', result.success)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", launch], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    log_text = (tmp_path / "worker.log").read_text(encoding="utf-8", errors="replace")
    assert "run success True" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:] + log_text[-3000:]
    step_two = (tmp_path / "io" / "step_two").read_bytes()
    assert pickle.loads(step_two) == [worker.pid, worker.pid]
