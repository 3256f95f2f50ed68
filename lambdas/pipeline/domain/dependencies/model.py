"""What a model call returns, and what its failures mean for the record that made it.

Bedrock's Converse errors (by the error code its API answers with) fall in three classes:

- the service is busy or slow (`ThrottlingException`, `ServiceUnavailableException`,
  `ModelTimeoutException`, `ModelNotReadyException`, `InternalServerException`, a read timeout):
  transient, retried with the lane's backoff;
- the request is wrong (`ValidationException`): permanent, dead-lettered with Bedrock's reason,
  since the same request gets the same answer;
- the lane may not use the model (`AccessDeniedException`: no grant, or the model not enabled in
  the account; `ResourceNotFoundException`: no such model or profile in the region; a
  `ValidationException` saying the model is not offered with on-demand throughput, only through an
  inference profile): no record can succeed until someone fixes the configuration, so the error
  says the lane should stop (`stops_lane`) rather than spend every record's receives on it.

No AWS SDK import here: the adapter (adapters/bedrock.py) hands over the code and message.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.domain.errors import MESSAGE_LIMIT, PermanentError, TransientError


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class ModelThrottled(TransientError):
    reason = "model_throttled"


class ModelUnavailable(TransientError):
    reason = "model_unavailable"


class ModelTimeout(TransientError):
    reason = "model_timeout"


class ModelRefused(TransientError):
    """The lane may not call its model. Transient for the record (nothing is wrong with it), and a
    reason to stop the lane until the account is fixed."""

    reason = "model_refused"
    stops_lane = True


class ModelRejectedInput(PermanentError):
    def __init__(self, message: str) -> None:
        super().__init__("model_rejected_input", message)


_TRANSIENT: dict[str, type[TransientError]] = {
    "ThrottlingException": ModelThrottled,
    "ServiceQuotaExceededException": ModelThrottled,
    "ServiceUnavailableException": ModelUnavailable,
    "InternalServerException": ModelUnavailable,
    "ModelNotReadyException": ModelUnavailable,
    "ModelErrorException": ModelUnavailable,
    "ModelTimeoutException": ModelTimeout,
}
_REFUSED = frozenset({"AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException"})
ON_DEMAND_UNSUPPORTED = "with on-demand throughput"
"""What Bedrock's ValidationException says when the model id names a model offered only through
inference profiles ("Invocation of model ID ... with on-demand throughput isn't supported. Retry
your request with the ID or ARN of an inference profile that contains this model."): the lane's
configuration is wrong, not the record, and every record would get the same answer."""


def error_for(code: str, status: int, message: str) -> Exception:
    """The domain error for a Converse error response. An unknown code is judged by its status:
    429 and 5xx are the service's trouble, any other 4xx the request's."""
    text = f"{code}: {message}"[:MESSAGE_LIMIT]
    if code in _TRANSIENT:
        return _TRANSIENT[code](text)
    if code in _REFUSED:
        return ModelRefused(text)
    if code == "ValidationException":
        if ON_DEMAND_UNSUPPORTED in message.lower():
            return ModelRefused(text)
        return ModelRejectedInput(text)
    if status == 429:
        return ModelThrottled(text)
    if status >= 500:
        return ModelUnavailable(text)
    return ModelRejectedInput(text)


TRIAGE_LABELS = ("question", "complaint", "spam", "other")
OTHER = "other"


def triage_label(answer: str) -> str:
    """The label a model's answer names: the answer's first word if it is one of the labels
    (case and punctuation aside), else `other`. A model that chats instead of labelling must not
    invent a fifth label in the data table."""
    words = answer.strip().split()
    first = words[0].strip(".,:;!\"'`*").lower() if words else ""
    return first if first in TRIAGE_LABELS else OTHER
