"""TypeSafe's Jev as a decision backend, through the official ``typesafe-sdk`` (TypeSafe or OpenRouter)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

import httpx2
from pydantic import SecretStr
from typesafe_sdk import (
    AsyncTypeSafeClient,
    Choice,
    ChoiceAnswer,
    RetryPolicy,
    SystemOneResponse,
    TypeSafeAPIError,
    TypeSafeAPITimeoutError,
    TypeSafeError,
)

from graphwalk_core.decisions.base import (
    JEV_MAX_OPTIONS,
    ChoiceResult,
    DecisionError,
    DecisionRequest,
    DecisionResponse,
    Usage,
    normalize_distribution,
    top_label,
)
from graphwalk_core.errors import ConfigError
from graphwalk_core.settings import DEFAULT_JEV_BASE_URLS, DEFAULT_JEV_MODELS, GraphwalkSettings, JevProvider

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The request id header TypeSafe sets on every response.
REQUEST_ID_HEADER = "x-typesafe-request-id"


class _SecretRedactor(logging.Filter):
    """Masks registered secrets in records of the SDK logger (it logs bodies unredacted at DEBUG)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            if any(secret in message for secret in self.secrets):
                for secret in self.secrets:
                    message = message.replace(secret, "***")
                record.msg, record.args = message, None
        return True


_REDACTOR = _SecretRedactor()
logging.getLogger("typesafe_sdk").addFilter(_REDACTOR)


def check_pinned_model(model: str) -> str:
    """Return ``model`` if it is a pinned id; a floating ``*-latest`` id is a :class:`ConfigError`."""
    name = model.strip()
    if not name:
        raise ConfigError("the Jev model id is empty: set GRAPHWALK_JEV_MODEL to a pinned id")
    if name.rsplit("/", 1)[-1] == "latest" or name.endswith("-latest"):
        raise ConfigError(
            f"Jev model {name!r} is not pinned: *-latest ids are refused; "
            f"use a versioned id such as {DEFAULT_JEV_MODELS['typesafe']!r}"
        )
    return name


def _echo_matches(pinned: str, echoed: str) -> bool:
    """The server may echo the pinned id or a dated endpoint of it (``typesafe/jev-1.13-20260917``)."""
    return echoed == pinned or echoed.startswith(pinned + "-")


class JevBackend:
    """Answers choice questions with Jev's full distributions over ``POST /v1/systemone``.

    One backend serves both providers: ``typesafe`` (direct) and ``openrouter`` differ only in base
    URL, key and model id. The model is always pinned and sent explicitly. Retries (429/5xx/timeouts,
    honouring ``Retry-After``) are the SDK's, configured here. The API key is kept as a
    :class:`SecretStr` and is redacted from every error this backend raises.
    """

    def __init__(
        self,
        api_key: SecretStr,
        *,
        provider: JevProvider = "typesafe",
        model: str | None = None,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout_s: float = 30.0,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 5.0,
        backoff_jitter: float = 0.25,
        retry_budget_s: float | None = None,
        compression: Literal["zstd", False] | None = None,
    ) -> None:
        if provider not in DEFAULT_JEV_MODELS:
            expected = sorted(DEFAULT_JEV_MODELS)
            raise ConfigError(f"unknown Jev provider {provider!r}: expected one of {expected}")
        if not isinstance(api_key, SecretStr) or not api_key.get_secret_value().strip():
            raise ConfigError("a Jev API key is required (GRAPHWALK_JEV_API_KEY)")
        # The SDK strips the key before sending it: keep (and redact) exactly what goes on the wire.
        api_key = SecretStr(api_key.get_secret_value().strip())
        if max_retries < 0:
            raise ConfigError(f"jev_max_retries must be >= 0, got {max_retries}")
        if timeout_s <= 0:
            raise ConfigError(f"jev_timeout_s must be > 0, got {timeout_s}")
        self.provider: JevProvider = provider
        self.model = check_pinned_model(model or DEFAULT_JEV_MODELS[provider])
        self.base_url = (base_url or DEFAULT_JEV_BASE_URLS[provider]).rstrip("/")
        self.timeout_s = timeout_s
        self.compression = compression
        try:
            self.retry = RetryPolicy(
                max_retries=max_retries,
                backoff_initial=backoff_initial_s,
                backoff_max=backoff_max_s,
                backoff_jitter=backoff_jitter,
                # The total budget covers every attempt and wait; by default room for all of them.
                timeout=retry_budget_s
                if retry_budget_s is not None
                else (max_retries + 1) * timeout_s + max_retries * backoff_max_s,
            )
        except TypeSafeError as exc:
            raise ConfigError(f"invalid Jev retry settings: {exc}") from None
        self._api_key = api_key
        _REDACTOR.secrets.add(api_key.get_secret_value())
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, AsyncTypeSafeClient]] = {}

    @classmethod
    def from_settings(cls, settings: GraphwalkSettings, **overrides: Any) -> JevBackend:
        """A backend configured from ``GRAPHWALK_JEV_*`` settings (keyword overrides win)."""
        if settings.jev_api_key is None:
            raise ConfigError("the jev decider needs an API key: set GRAPHWALK_JEV_API_KEY")
        kwargs: dict[str, Any] = {
            "provider": settings.jev_provider,
            "model": settings.resolved_jev_model(),
            "base_url": settings.resolved_jev_base_url(),
            "max_retries": settings.jev_max_retries,
            "timeout_s": settings.jev_timeout_s,
        }
        kwargs.update(overrides)
        return cls(settings.jev_api_key, **kwargs)

    def __repr__(self) -> str:
        return f"JevBackend(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def model_id(self) -> str:
        return f"jev:{self.model}"

    @property
    def max_options(self) -> int:
        return JEV_MAX_OPTIONS

    def _client(self) -> AsyncTypeSafeClient:
        """The SDK client for the running event loop (an HTTP pool cannot cross loops)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            try:
                client = AsyncTypeSafeClient(
                    api_key=self._api_key.get_secret_value(),
                    model=self.model,
                    base_url=self.base_url,
                    retry=self.retry,
                    timeout=self.timeout_s,
                    compression=self.compression,
                )
            except TypeSafeError as exc:
                raise ConfigError(self._redact(f"cannot configure the Jev client: {exc}")) from None
            self._clients[id(loop)] = (loop, client)
            return client
        return entry[1]

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (a later call opens a new one); forget those of loops
        already closed. A client another running loop (thread) uses is left to it."""
        loop = asyncio.get_running_loop()
        entry = self._clients.pop(id(loop), None)
        self._clients = {
            key: (other, c) for key, (other, c) in self._clients.items() if not other.is_closed()
        }
        if entry is not None and entry[0] is loop:
            await entry[1].aclose()

    async def __aenter__(self) -> JevBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _redact(self, text: str) -> str:
        secret = self._api_key.get_secret_value()
        return text.replace(secret, "***") if secret else text

    def _error(self, what: str, exc: BaseException | None) -> DecisionError:
        """A DecisionError naming the status and request id, never the key (``None``: out of budget)."""
        if exc is None:
            detail = f"no whole reply within the retry budget of {self.retry.timeout:g}s"
        elif isinstance(exc, TypeSafeAPITimeoutError):
            detail = f"timed out after {self.timeout_s}s per attempt"
        elif isinstance(exc, TypeSafeAPIError):
            detail = f"HTTP {exc.status}: {exc} (request id: {exc.request_id or '-'})"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        who = f"Jev ({self.provider}, {self.model})"
        policy = f"up to {self.retry.max_retries} retries"
        status = exc.status if isinstance(exc, TypeSafeAPIError) else None
        return DecisionError(self._redact(f"{who} {what} failed ({policy}): {detail}"), status=status)

    async def _sdk_call(self, what: str, call: Awaitable[T]) -> T:
        """Await an SDK call, cut at the retry budget; its failure becomes a redacted DecisionError with
        no chained SDK error.

        The SDK's timeout bounds each read, not a reply: one trickling in never ends an attempt, so the
        budget is enforced here. The error is raised outside the ``except`` block so that not even
        ``__context__`` keeps the SDK exception (whose body may echo the key).
        """
        try:
            async with asyncio.timeout(self.retry.timeout):
                return await call
        except TypeSafeError as exc:
            failure = self._error(what, exc)
        except TimeoutError:
            failure = self._error(what, None)
        raise failure

    async def decide(self, request: DecisionRequest) -> DecisionResponse:
        """One ``system_one`` call: every question of ``request`` shares its ``state``."""
        questions = {
            q.key: Choice(instructions=q.instructions, criteria=dict(q.options)) for q in request.questions
        }
        for q in request.questions:
            if len(q.options) > JEV_MAX_OPTIONS:
                raise DecisionError(
                    f"question {q.key!r}: {len(q.options)} options exceed Jev's limit of {JEV_MAX_OPTIONS}"
                )
        started = time.perf_counter()
        call = self._client().system_one(state=request.state, questions=questions, model=self.model)
        resp = await self._sdk_call("decision", call)
        latency = time.perf_counter() - started
        extras = _raw_extras(resp.raw_http_response.content)
        usage = Usage(
            input_tokens=resp.usage.input_tokens or 0,
            output_tokens=resp.usage.output_tokens or 0,
            cost_usd=extras.get("cost"),
        )
        try:
            return self._parse(request, resp, latency, extras, usage)
        except DecisionError as exc:  # the reply was billed all the same
            exc.usage = usage
            raise

    def _parse(
        self,
        request: DecisionRequest,
        resp: SystemOneResponse,
        latency: float,
        extras: dict[str, Any],
        usage: Usage,
    ) -> DecisionResponse:
        header_id = resp.raw_http_response.headers.get(REQUEST_ID_HEADER)
        if not _echo_matches(self.model, resp.model):
            raise DecisionError(
                f"Jev answered with model {resp.model!r}, not the pinned {self.model!r} "
                f"(request id: {header_id or '-'})"
            )
        results: dict[str, ChoiceResult] = {}
        for q in request.questions:
            answer = resp.answers.get(q.key)
            if not isinstance(answer, ChoiceAnswer):
                got = "no answer" if answer is None else f"a {answer.type!r} answer"
                raise DecisionError(
                    f"question {q.key!r}: Jev returned {got} instead of a choice "
                    f"(request id: {header_id or '-'})"
                )
            probs = normalize_distribution(list(q.options), dict(answer.probabilities), key=q.key)
            results[q.key] = ChoiceResult(
                key=q.key, probabilities=probs, top=top_label(probs), confidence=answer.confidence
            )
        return DecisionResponse(
            results=results,
            usage=usage,
            latency_s=latency,
            model=resp.model,
            request_id=extras.get("id") or header_id,
            provider=extras.get("provider") or self.provider,
        )

    async def verify_model(self) -> str:
        """Check the pinned model against the provider's listing; return the id found.

        TypeSafe: ``GET /v1/models`` lists ``{"models": [{"name": ...}]}``. OpenRouter's general list
        omits decision models, so its ``GET /v1/models/{id}/endpoints`` is asked instead and must
        answer ``{"data": {"id": <model>, "endpoints": [...]}}`` with at least one endpoint.
        """
        if self.provider == "typesafe":
            listing = await self._sdk_call("model listing", self._client().models.list())
            names = [m.name for m in listing.models]
            if self.model not in names:
                raise ConfigError(
                    f"Jev model {self.model!r} is not offered by {self.base_url}; it lists {names}"
                )
            return self.model
        return await self._verify_openrouter()

    async def _verify_openrouter(self) -> str:
        url = f"{self.base_url}/v1/models/{self.model}/endpoints"
        headers = {
            "Authorization": f"Bearer {self._api_key.get_secret_value()}",
            "Accept": "application/json",
        }
        try:
            async with httpx2.AsyncClient(timeout=self.timeout_s) as http:
                reply = await http.get(url, headers=headers)
        except httpx2.HTTPError as exc:
            message = f"Jev model check at {url} failed: {type(exc).__name__}"
            raise DecisionError(self._redact(message)) from None
        if reply.status_code == 404:
            raise ConfigError(f"OpenRouter does not know the Jev model {self.model!r} ({url} -> 404)")
        if not reply.is_success:
            raise DecisionError(self._redact(f"Jev model check at {url} failed: HTTP {reply.status_code}"))
        try:
            data = reply.json()["data"]
            found, endpoints = data["id"], data["endpoints"]
        except (ValueError, KeyError, TypeError):
            body = self._redact(reply.text)[:200]  # redacted first: a cut must not leave part of the key
            raise DecisionError(f"Jev model check at {url}: malformed body {body!r}") from None
        if found != self.model or not endpoints:
            raise ConfigError(
                f"OpenRouter lists model {found!r} with {len(endpoints)} endpoint(s); "
                f"expected {self.model!r} with at least one"
            )
        return self.model


def _raw_extras(body: bytes) -> dict[str, Any]:
    """OpenRouter's top-level ``id`` and ``provider`` and ``usage.cost``, which the SDK drops."""
    try:
        raw = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    usage = raw.get("usage") if isinstance(raw.get("usage"), dict) else {}
    cost = usage.get("cost")
    return {
        "id": raw.get("id") if isinstance(raw.get("id"), str) else None,
        "provider": raw.get("provider") if isinstance(raw.get("provider"), str) else None,
        "cost": float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
    }
