"""The local runtime's model: Bedrock's Converse API, answered in this process through moto's
`bedrock-runtime` backend (which has no Converse of its own; moto_converse.py adds it).

It answers as the service does, with its status codes, error codes and messages, so the consumer's
adapter (lambdas/pipeline/adapters/bedrock.py) is the same code that runs against AWS. What it
says is made up: a triage prompt (a system prompt asking for a label) gets a label from keyword
rules, anything else a thank-you that counts the characters it read. Tokens are counted as
Bedrock's models roughly count them, a token per four characters.

How it behaves is set per run (`configure`, or the drive session's `configure_model`):
- `latency_ms`: slept before answering, as a model's time to answer;
- `failure_rate` and `failure_code`: that share of calls fails with that error;
- `rejects`: a prompt containing this text fails with a 500 every time, the shape of a poison
  message (one request that fails every time while the rest succeed);
- `requests_per_second`: calls beyond it in any one second are refused with a ThrottlingException;
- `requests_per_minute`: likewise in any one minute (Bedrock's quotas are requests a minute);
- `tokens_per_minute`: per model, a call whose input tokens plus its maxTokens would take the
  model past it in the last 60 s is refused with a ThrottlingException saying too many tokens
  (Bedrock counts maxTokens against the quota when a call starts);
- `refuse`: every call is refused as for a model the account has not enabled;
- `on_demand`: False plays a model offered only through inference profiles: a call naming the
  model itself (not a profile, `us.`, `eu.`, ...) is refused with Bedrock's ValidationException.

Every call is recorded (start, end, outcome) for the scenarios, which measure the model's own
view of its traffic from it.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

ERRORS: Mapping[str, str] = {
    "ThrottlingException": "Too many requests, please wait before trying again.",
    "ServiceUnavailableException": "Bedrock is unable to process your request.",
    "ModelTimeoutException": "Model has timed out in processing the request. Try your request again.",
    "InternalServerException": "The server encountered an internal error while processing the request.",
    "ModelNotReadyException": "Model is not ready to serve inference requests. Try again later.",
    "AccessDeniedException": "You don't have access to the model with the specified model ID.",
    "ValidationException": "The provided model identifier is invalid.",
}
"""Bedrock's error codes and the messages it answers them with."""
ON_DEMAND_UNSUPPORTED = (
    "Invocation of model ID {model_id} with on-demand throughput isn\u2019t supported. Retry your request with "
    "the ID or ARN of an inference profile that contains this model."
)
"""Bedrock's ValidationException message for a model offered only through inference profiles."""
PROFILE_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "global.")
"""A model id starting so names a cross-region inference profile (stacks/config/models.py)."""
TOO_MANY_TOKENS = "Too many tokens, please wait before trying again."
"""Bedrock's ThrottlingException message when a model's tokens a minute are spent."""

_QUESTION = re.compile(r"\?|\b(how|when|where|what|price|open|available)\b", re.IGNORECASE)
_COMPLAINT = re.compile(r"\b(refund|broken|worst|terrible|never arrived|scam|angry)\b", re.IGNORECASE)
_SPAM = re.compile(r"https?://|\b(follow me|free money|crypto|dm me)\b", re.IGNORECASE)


def label_for(text: str) -> str:
    if _SPAM.search(text):
        return "spam"
    if _COMPLAINT.search(text):
        return "complaint"
    if _QUESTION.search(text):
        return "question"
    return "other"


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


class ConverseError(Exception):
    """An error answer; moto_converse.py raises it as moto's service error of the same code."""

    def __init__(self, code: str, message: str | None = None) -> None:
        super().__init__(message or ERRORS[code])
        self.code = code


@dataclass(frozen=True)
class ModelBehaviour:
    latency_ms: float = 0.0
    failure_rate: float = 0.0
    failure_code: str = "ServiceUnavailableException"
    rejects: str = ""
    requests_per_second: float | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: int | None = None
    refuse: bool = False
    on_demand: bool = True

    def __post_init__(self) -> None:
        if self.latency_ms < 0 or not 0.0 <= self.failure_rate <= 1.0:
            raise ValueError("the model's latency must be >= 0 and its failure rate within 0..1")
        if self.failure_code not in ERRORS:
            raise ValueError(f"failure_code must be one of Bedrock's: {', '.join(sorted(ERRORS))}")
        for rate in (self.requests_per_second, self.requests_per_minute):
            if rate is not None and rate <= 0:
                raise ValueError("requests_per_second and requests_per_minute must be > 0, or None for no limit")
        if self.tokens_per_minute is not None and self.tokens_per_minute <= 0:
            raise ValueError("tokens_per_minute must be > 0, or None for no limit")


@dataclass(frozen=True)
class Call:
    model_id: str
    started: float
    ended: float
    outcome: str
    """`ok` or the error code answered."""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class ConverseFake:
    behaviour: ModelBehaviour = field(default_factory=ModelBehaviour)
    seed: int = 23
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _calls: deque[Call] = field(default_factory=lambda: deque(maxlen=100_000), repr=False)
    _window: deque[float] = field(default_factory=deque, repr=False)
    _minute: deque[float] = field(default_factory=deque, repr=False)
    _tokens: dict[str, deque[tuple[float, int]]] = field(default_factory=dict, repr=False)
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def reset(self) -> None:
        """As a fresh runtime starts: default behaviour, no calls recorded."""
        with self._lock:
            self.behaviour = ModelBehaviour()
            self._calls.clear()
            self._window.clear()
            self._minute.clear()
            self._tokens.clear()
            self._rng.seed(self.seed)

    def configure(self, **changes: Any) -> ModelBehaviour:
        """Change some of the behaviour (names as ModelBehaviour's fields); returns the new one."""
        unknown = sorted(set(changes) - {f.name for f in fields(ModelBehaviour)})
        if unknown:
            raise ValueError(f"the model has no setting {', '.join(unknown)}")
        with self._lock:
            self.behaviour = replace(self.behaviour, **changes)
            return self.behaviour

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def converse(
        self,
        model_id: str,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        inference: Mapping[str, Any],
    ) -> dict[str, Any]:
        started = time.time()
        behaviour = self.behaviour
        system_text = "".join(str(block.get("text", "")) for block in system or ())
        prompt = "".join(
            str(block.get("text", "")) for message in messages or () for block in message.get("content") or ()
        )
        try:
            reserved = tokens(system_text) + tokens(prompt) + int(inference.get("maxTokens") or 0)
            self._admit(behaviour, started, model_id, reserved)
            if behaviour.latency_ms:
                time.sleep(behaviour.latency_ms / 1000.0)
            if behaviour.rejects and behaviour.rejects in prompt:
                raise ConverseError("InternalServerException")
            with self._lock:
                failed = self._rng.random() < behaviour.failure_rate
            if failed:
                raise ConverseError(behaviour.failure_code)
        except ConverseError as error:
            self._record(Call(model_id, started, time.time(), error.code))
            raise
        answer = (
            label_for(prompt)
            if "label" in system_text.lower()
            else f"Thanks for your message! ({len(prompt)} characters read)"
        )
        limit = int(inference.get("maxTokens") or 0)
        stop = "end_turn"
        if limit and tokens(answer) > limit:
            answer, stop = answer[: limit * 4], "max_tokens"
        used_in, used_out = tokens(system_text) + tokens(prompt), tokens(answer)
        ended = time.time()
        self._record(Call(model_id, started, ended, "ok", used_in, used_out))
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
            "stopReason": stop,
            "usage": {"inputTokens": used_in, "outputTokens": used_out, "totalTokens": used_in + used_out},
            "metrics": {"latencyMs": int((ended - started) * 1000)},
        }

    def _admit(self, behaviour: ModelBehaviour, now: float, model_id: str, reserved: int) -> None:
        if behaviour.refuse:
            raise ConverseError("AccessDeniedException")
        if not behaviour.on_demand and not model_id.startswith(PROFILE_PREFIXES):
            raise ConverseError("ValidationException", ON_DEMAND_UNSUPPORTED.format(model_id=model_id))
        with self._lock:
            while self._window and self._window[0] <= now - 1.0:
                self._window.popleft()
            while self._minute and self._minute[0] <= now - 60.0:
                self._minute.popleft()
            # A refused call counts against neither window: Bedrock did not serve it.
            for rate, window in (
                (behaviour.requests_per_second, self._window),
                (behaviour.requests_per_minute, self._minute),
            ):
                if rate is not None and len(window) >= rate:
                    raise ConverseError("ThrottlingException")
            spent = self._tokens.setdefault(model_id, deque())
            while spent and spent[0][0] <= now - 60.0:
                spent.popleft()
            limit = behaviour.tokens_per_minute
            if limit is not None and sum(n for _, n in spent) + reserved > limit:
                raise ConverseError("ThrottlingException", TOO_MANY_TOKENS)
            self._window.append(now)
            self._minute.append(now)
            spent.append((now, reserved))

    def tokens_in_window(self, model_id: str, now: float) -> int:
        """The tokens the model counted in the 60 s before `now`."""
        with self._lock:
            return sum(n for at, n in self._tokens.get(model_id, ()) if at > now - 60.0)

    def _record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)


FAKE = ConverseFake()
"""The one model of this process: in-process calls from every function reach it."""
