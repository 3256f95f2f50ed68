"""A lane's model behind its tokens-a-minute budget (domain/dependencies/token_rates.py): each call reserves
its maxTokens plus its input's estimate before it is made; a full window defers the record
without spending an attempt (`DependencyBusy`), as the requests budget does."""

from __future__ import annotations

from pipeline.domain.consumer.work import Vendor
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.dependencies.token_rates import TokenKeeper, model_tokens, reservation
from pipeline.domain.errors import DependencyBusy, PermanentError


class TokenBudgeted:
    def __init__(
        self, model: Vendor, keeper: TokenKeeper, *, model_id: str, system_prompt: str, max_tokens: int, per_minute: int
    ) -> None:
        self._model = model
        self._keeper = keeper
        self._system_prompt = system_prompt
        self._max_tokens = max_tokens
        self._rate = model_tokens(model_id, per_minute)

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        tokens = reservation(self._max_tokens, self._system_prompt, prompt)
        if tokens > self._rate.per_slice():
            # It would never fit a slice: waiting would only hold the record until its retries ran out.
            raise PermanentError(
                "over_token_budget", f"{tokens} tokens exceed {self._rate.key}'s share of {self._rate.per_slice()}"
            )
        try:
            taken = self._keeper.take(self._rate, tokens)
        except Exception as exc:
            # Fail closed, as the requests budget does: the quota is Bedrock's to enforce.
            raise DependencyBusy(f"{self._rate.key} could not be counted: {type(exc).__name__}") from exc
        if not taken:
            raise DependencyBusy(f"{self._rate.key} is at its {self._rate.limit} tokens a minute")
        return self._model.complete(prompt, timeout=timeout)
