"""When to ingest a changed source: once its fingerprint settled (a file being written is not read half-done).

A source is ready when its fingerprint is the same at two consecutive checks and differs from the one
last requested. The state between checks is JSON: ``{"requested": {id: fp}, "observed": {id: fp},
"requests": {id: n}}`` (``n``: how many times the source was ready, so each request has its own run key,
also when a file goes back to an earlier content); the earlier flat ``{id: fp}`` (fingerprints requested)
is still read, so nothing is re-requested.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SettleState:
    """Per source id: the fingerprint last requested, the one seen at the last check, and how many runs
    were requested (0 when absent: an earlier state)."""

    requested: dict[str, str] = field(default_factory=dict)
    observed: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)

    def run_key(self, source_id: str) -> str:
        """The run key of the source's latest request: unique per request (a Dagster sensor drops a run
        whose key it has seen, so a key made of the fingerprint alone would drop the ingest of a file put
        back to an earlier content), and the same when a failed tick is evaluated again."""
        return f"{source_id}:{self.requests.get(source_id, 0)}:{self.requested[source_id][:16]}"

    @classmethod
    def from_json(cls, text: str | None) -> SettleState:
        """Read a state written by :meth:`to_json`, or the earlier flat ``{id: fingerprint}``."""
        try:
            raw = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"settle state is not JSON ({exc}): {text!r}") from exc
        if not isinstance(raw, dict):
            raise ValueError(f"settle state: expected a JSON object, got {text!r}")
        if all(isinstance(v, str) for v in raw.values()):
            return cls(requested=dict(raw))
        fields = {"requested": str, "observed": str, "requests": int}
        for name, kind in fields.items():
            value = raw.get(name, {})
            if not isinstance(value, dict) or not all(
                type(v) is kind and isinstance(k, str) for k, v in value.items()
            ):
                what = "fingerprints (text)" if kind is str else "counts (integers)"
                raise ValueError(f"settle state: {name!r} must map source ids to {what}, got {text!r}")
        return cls(**{name: dict(raw.get(name, {})) for name in fields})

    def to_json(self) -> str:
        state = {"requested": self.requested, "observed": self.observed, "requests": self.requests}
        return json.dumps(state, sort_keys=True)


@dataclass(frozen=True)
class SettleDecision:
    """Sources to ingest now, changed sources still settling (both in the order checked), next state."""

    ready: list[str]
    settling: list[str]
    state: SettleState


def settle(state: SettleState, current: Mapping[str, str | None]) -> SettleDecision:
    """Decide over ``current`` (id -> fingerprint, None when the source cannot be read now, e.g. its
    path is missing: not requested, and a later fingerprint must settle again). Ids not in ``current``
    (no longer declared) are dropped from the state but for their request counts: a source declared
    again must not reuse a run key of its earlier requests (Dagster would drop that run)."""
    ready: list[str] = []
    settling: list[str] = []
    requested: dict[str, str] = {}
    requests = dict(state.requests)
    for sid, fingerprint in current.items():
        last = state.requested.get(sid)
        if fingerprint is not None and fingerprint != last:
            if fingerprint == state.observed.get(sid):
                ready.append(sid)
                last = fingerprint
                requests[sid] = requests.get(sid, 0) + 1
            else:
                settling.append(sid)
        if last is not None:
            requested[sid] = last
    observed = {sid: fp for sid, fp in current.items() if fp is not None}
    return SettleDecision(ready, settling, SettleState(requested, observed, requests))
