"""Fixtures for the eval tests: the local OpenAI-compatible server."""

from servers.openai_server import openai_server  # noqa: F401
