"""LLM backends: litellm (any provider) behind the LLMBackend protocol, and a scripted fake for tests."""

from graphwalk_core.llm.base import LLMBackend, LLMError, LLMReplyError, LLMResult, Message
from graphwalk_core.llm.factory import make_llm
from graphwalk_core.llm.fake import FakeLLM
from graphwalk_core.llm.jsonreply import ReplyFormatError, extract_json_object, parse_json_reply
from graphwalk_core.llm.litellm_backend import LiteLLMBackend

__all__ = [
    "FakeLLM",
    "LLMBackend",
    "LLMError",
    "LLMReplyError",
    "LLMResult",
    "LiteLLMBackend",
    "Message",
    "ReplyFormatError",
    "extract_json_object",
    "make_llm",
    "parse_json_reply",
]
