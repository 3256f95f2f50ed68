"""The model a lane's task calls, as the stack gives it to the consumer (`MODEL_SETTINGS`).

Lanes without a model get no variable at all: their tasks never call one, and a call would fail
loudly rather than reach a model nobody chose for them.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_TOKENS_LIMIT = 8192
"""Above what the models configured here answer in one turn; a typo of a zero too many fails."""


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    model_id: str
    """A Bedrock model id (`anthropic.claude-3-haiku-20240307-v1:0`) or inference profile id
    (`eu.anthropic.claude-3-haiku-20240307-v1:0`): what Converse is called with."""
    system_prompt: str
    max_tokens: int
    temperature: float
    call_timeout_seconds: float = 20.0
    """The HTTP read timeout of one Converse call: a stalled connection fails as a model timeout
    well inside the lane's task limit instead of holding its slot of the budget."""
    tokens_per_minute: int | None = None
    """The model's tokens a minute this lane may reserve (domain/dependencies/token_rates.py), or None:
    unbudgeted, Bedrock's own quota refusing past it. None by default because the quota is the
    account's, per model and region, and differs between them; a made-up figure would either
    throttle below what the account has or fail to bound it. Set it to the account's quota (the
    Service Quotas console, "On-demand model inference tokens per minute")."""

    def __post_init__(self) -> None:
        problems = []
        if not self.model_id.strip():
            problems.append("model_id must be set")
        if not self.system_prompt.strip():
            problems.append("system_prompt must be set")
        if not 1 <= self.max_tokens <= MAX_TOKENS_LIMIT:
            problems.append(f"max_tokens must be 1..{MAX_TOKENS_LIMIT}")
        if not 0.0 <= self.temperature <= 1.0:
            problems.append("temperature must be 0..1")
        if self.call_timeout_seconds <= 0:
            problems.append("call_timeout_seconds must be > 0")
        # A slice gets a 1/11 share (domain/dependencies/rates.py): a smaller quota could never take one call.
        if self.tokens_per_minute is not None and self.tokens_per_minute < 11 * (self.max_tokens + 1):
            problems.append("tokens_per_minute must be at least 11 x (max_tokens + 1), or None")
        if problems:
            raise ValueError(f"model {self.model_id!r}: " + "; ".join(problems))
