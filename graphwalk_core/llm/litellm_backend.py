"""LiteLLMBackend: any litellm model behind the LLMBackend protocol, with retries and JSON output."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from pydantic import SecretStr

from graphwalk_core.errors import InputError
from graphwalk_core.llm.base import LLMError, LLMResult, Message, T
from graphwalk_core.llm.jsonreply import ask_for_json
from graphwalk_core.model.usage import Usage

log = logging.getLogger(__name__)

#: HTTP statuses worth another try (timeouts, conflicts, rate limits, server errors).
RETRY_STATUSES = frozenset({408, 409, 429})
#: Longest wait honoured from a Retry-After header, in seconds.
MAX_RETRY_AFTER_S = 60.0
#: Header through which an OpenAI-compatible proxy (e.g. a LiteLLM proxy) reports the real cost.
COST_HEADER = "llm_provider-x-litellm-response-cost"
#: The environment variables litellm reads a provider's key from when it is given none (OPENAI_API_KEY,
#: OPENROUTER_API_KEY, AZURE_AD_TOKEN, AWS_SECRET_ACCESS_KEY, ...): a server's error may echo their values.
KEY_VARIABLE = re.compile(r"(KEY|TOKEN|SECRET)(_|$)", re.IGNORECASE)
#: Shorter values of such variables are not hidden (``SOME_TOKEN=1`` would star out every 1).
MIN_KEY_CHARS = 8


def _not_loop_change_notice(record: logging.LogRecord) -> bool:
    """Drop litellm's notice that its logging worker moved to a new event loop (one per asyncio.run)."""
    return not record.getMessage().startswith("LoggingWorker: event loop changed")


def load_litellm() -> ModuleType:
    """Import litellm offline (local cost map, no telemetry, no debug banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm_log = logging.getLogger("LiteLLM")
    if _not_loop_change_notice not in litellm_log.filters:
        litellm_log.addFilter(_not_loop_change_notice)
    return litellm


def _retry_after_s(err: Exception) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date) on the error's response."""
    headers = getattr(err, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(err, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    try:
        if value is not None:
            return float(value) / 1000.0
        value = headers.get("retry-after")
        if value is None:
            return None
        return float(value)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _is_retryable(err: Exception, litellm: ModuleType) -> bool:
    if isinstance(err, litellm.APIConnectionError | litellm.Timeout | TimeoutError):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and (status in RETRY_STATUSES or status >= 500)


def _reported_cost(response: Any) -> float | None:
    """The cost the provider reported (``usage.cost`` or the proxy cost header); never an estimate."""
    cost = getattr(getattr(response, "usage", None), "cost", None)
    if cost is None:
        headers = (getattr(response, "_hidden_params", None) or {}).get("additional_headers") or {}
        cost = headers.get(COST_HEADER)
    try:
        return float(cost) if cost is not None else None
    except (TypeError, ValueError):
        return None


@dataclass
class _Totals:
    """Usage and request count summed over every HTTP call of one ``complete``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    attempts: int = 0

    def add(self, response: Any) -> None:
        usage = getattr(response, "usage", None)
        self.input_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.output_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        cost = _reported_cost(response)
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def usage(self) -> Usage:
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens, cost_usd=self.cost_usd)


class LiteLLMBackend:
    """Chat completions through ``litellm.acompletion`` (imported on first use).

    Transient failures (429, 5xx, malformed bodies, timeouts, connection errors) are retried up to
    ``max_retries`` times, waiting as the server's Retry-After says, else ``backoff_s * 2**n``. With a
    ``schema`` the model is asked for a JSON object; an invalid reply is retried once with the validation
    error appended, then LLMError. ``LLMResult.attempts`` counts every HTTP request made.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: SecretStr | None = None,
        max_retries: int = 2,
        timeout_s: float = 60.0,
        *,
        backoff_s: float = 0.5,
    ) -> None:
        if not model or not isinstance(model, str):
            raise InputError(f"LiteLLMBackend needs a litellm model string, got {model!r}")
        if max_retries < 0:
            raise InputError(f"max_retries must be >= 0, got {max_retries}")
        if timeout_s <= 0:
            raise InputError(f"timeout_s must be > 0, got {timeout_s}")
        self.model = model
        self.api_base = api_base
        # A key read with its trailing newline (a secret file) would be refused as a header value.
        self._api_key = SecretStr(api_key.get_secret_value().strip()) if api_key is not None else None
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s

    @property
    def model_id(self) -> str:
        return self.model

    def __repr__(self) -> str:
        return f"LiteLLMBackend(model={self.model!r}, api_base={self.api_base!r})"

    def _redact(self, text: str) -> str:
        """``text`` without the key: the one given, else any litellm may have read from the environment."""
        found = [v.strip() for name, v in os.environ.items() if KEY_VARIABLE.search(name)]
        keys = [k for k in found if len(k) >= MIN_KEY_CHARS]
        if self._api_key is not None:
            keys.append(self._api_key.get_secret_value())
        for key in sorted(keys, key=len, reverse=True):  # a key holding another is hidden whole
            text = text.replace(key, "**********") if key else text
        return text

    async def _call(
        self, litellm: ModuleType, messages: list[dict[str, str]], extra: dict[str, Any], totals: _Totals
    ) -> str:
        """One completion with transport retries; the reply text."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout_s,
            "max_retries": 0,  # the OpenAI SDK's own retries: off, this loop retries
            "num_retries": 0,
            **extra,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key.get_secret_value()
        for retry in range(self.max_retries + 1):
            totals.attempts += 1
            try:
                # the client's timeout bounds each read: a reply trickling in would never end the attempt
                async with asyncio.timeout(self.timeout_s):
                    response = await litellm.acompletion(**kwargs)
            except Exception as err:
                if type(err) is TimeoutError:
                    err = TimeoutError(f"no whole reply within {self.timeout_s:g}s")
                detail = self._redact(f"{type(err).__name__}: {err}")
                if retry == self.max_retries or not _is_retryable(err, litellm):
                    raise LLMError(
                        f"LLM {self.model} failed after {totals.attempts} attempt(s): {detail}"
                    ) from None
                wait = _retry_after_s(err)
                wait = self.backoff_s * 2**retry if wait is None else min(wait, MAX_RETRY_AFTER_S)
                log.warning("LLM %s: %s; retrying in %.2fs", self.model, detail, wait)
                await asyncio.sleep(wait)
                continue
            totals.add(response)
            content = response.choices[0].message.content if response.choices else None
            return content or ""
        raise AssertionError("unreachable")  # pragma: no cover

    async def complete(
        self, messages: Sequence[Message], *, schema: type[T] | None = None, temperature: float = 0.0
    ) -> LLMResult[T]:
        """One completion; with ``schema`` the reply is validated into it (one retry with the error)."""
        if not messages:
            raise InputError("complete() needs at least one message")
        litellm = load_litellm()
        start = time.perf_counter()
        chat = [{"role": m.role, "content": m.content} for m in messages]
        extra: dict[str, Any] = {"temperature": temperature}
        totals = _Totals()
        parsed: T | None = None
        try:
            if schema is None:
                text = await self._call(litellm, chat, extra, totals)
            else:
                extra["response_format"] = {"type": "json_object"}
                extra["drop_params"] = True  # providers without JSON mode still get the instruction

                async def send(msgs: list[dict[str, str]]) -> str:
                    return await self._call(litellm, msgs, extra, totals)

                text, parsed = await ask_for_json(send, chat, schema, self.model)
        except LLMError as err:  # what the failed completion cost goes with it
            err.usage, err.attempts = totals.usage(), totals.attempts
            raise
        return LLMResult(
            text=text,
            parsed=parsed,
            usage=totals.usage(),
            model=self.model,
            latency_s=time.perf_counter() - start,
            attempts=totals.attempts,
        )
