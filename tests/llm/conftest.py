"""The local OpenAI-compatible server fixture for LLM tests."""

from servers.openai_server import openai_server  # noqa: F401
