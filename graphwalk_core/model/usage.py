"""What a remote call cost: tokens, and dollars when the provider reports them."""

from __future__ import annotations

from pydantic import BaseModel


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # only when the provider reports it; never estimated
