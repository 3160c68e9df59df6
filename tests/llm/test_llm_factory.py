"""make_llm: None without a model; otherwise a LiteLLMBackend wired to the configured server."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import SecretStr
from servers.openai_server import OpenAIServer

from graphwalk_core.llm import LiteLLMBackend, Message, make_llm
from graphwalk_core.settings import GraphwalkSettings


def test_none_without_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHWALK_LLM_MODEL", raising=False)
    assert make_llm(GraphwalkSettings(_env_file=None)) is None  # type: ignore[call-arg]


async def test_from_environment_end_to_end(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHWALK_LLM_MODEL", "openai/test-model")
    monkeypatch.setenv("GRAPHWALK_LLM_API_BASE", openai_server.base_url)
    monkeypatch.setenv("GRAPHWALK_LLM_API_KEY", "sk-from-env")
    llm = make_llm(GraphwalkSettings(_env_file=None))  # type: ignore[call-arg]
    assert isinstance(llm, LiteLLMBackend)
    assert (llm.model_id, llm.api_base) == ("openai/test-model", openai_server.base_url)
    openai_server.enqueue("hello back")
    result = await llm.complete([Message(role="user", content="hello")])
    assert result.text == "hello back"
    assert openai_server.chat_requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert "sk-from-env" not in repr(llm)


def test_importing_llm_package_does_not_import_litellm() -> None:
    code = "import sys, graphwalk_core.llm, graphwalk_core.embeddings; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_explicit_settings() -> None:
    settings = GraphwalkSettings(llm_model="openai/x", llm_api_key=SecretStr("k"), _env_file=None)  # type: ignore[call-arg]
    llm = make_llm(settings)
    assert isinstance(llm, LiteLLMBackend)
    assert (llm.model, llm.api_base, llm.max_retries, llm.timeout_s) == ("openai/x", None, 2, 60.0)
