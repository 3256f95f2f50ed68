"""What a failed record means: transient (retry with backoff) or permanent (dead-letter now).

Tasks say what they know by raising `TransientError` or `PermanentError`. Anything else is
classified here, and the rule is "who is at fault":

- The world (throttling, a 5xx, a dropped connection, a timeout, a concurrent transaction):
  transient. Retrying later can succeed.
- The deployment (access denied, a missing table or queue): transient too. Every message fails
  the same way, and the fix is a deploy, not a dead letter per message; the receive count still
  bounds how long each message waits for it.
- The input (a 4xx validation error from AWS, or ValueError / KeyError / TypeError / IndexError
  raised while a task reads its payload): permanent. The same bytes give the same answer.
- Anything else (AttributeError, RuntimeError, ...) is most likely a bug in our code, which a
  deploy fixes: transient, bounded by max receives, after which the DLQ keeps the message for a
  redrive.

This module never imports botocore (the domain stays free of AWS SDKs): AWS errors are
recognised by the `response` dict every botocore ClientError carries, and by the module of
botocore's own (network-level) exception types.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

MESSAGE_LIMIT = 500
"""Error text kept in rows and DLQ attributes; a stack trace belongs in the log line."""


@dataclass(frozen=True)
class Pace:
    """When a dependency that refused a call as over its rate may be asked again, as it asks: never
    sooner than `floor_seconds`, and within a ceiling that starts at `ceiling_seconds` and doubles
    each attempt, the delay drawn evenly between (domain/consumer/retry.py `paced_backoff`)."""

    floor_seconds: float
    ceiling_seconds: float

    def __post_init__(self) -> None:
        if not 0 < self.floor_seconds <= self.ceiling_seconds:
            raise ValueError(f"a pace needs 0 < floor_seconds <= ceiling_seconds, got {self}")


class TransientError(Exception):
    """Retrying later may succeed: a dependency is slow, throttled, or briefly down."""

    reason = "transient"
    pace: Pace | None = None
    """Set by a dependency's rate refusal: its retry waits as the dependency asks, not the lane's
    usual backoff, which starts from nothing."""


class PermanentError(Exception):
    """No retry can succeed: the input is wrong, not the world.

    `reason` is short and machine-readable (it becomes the DLQ message's `reason` attribute);
    the message says what a person should look at.
    """

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason


AWS_THROTTLED = "aws_throttled_or_unavailable"
"""The reason of a failure that is AWS's state, not the record's: the consumer defers such a record
and spends no attempt on it (domain/consumer/settling.py)."""


class AwsThrottled(TransientError):
    """DynamoDB left part of a batch request unprocessed (`UnprocessedKeys`, `UnprocessedItems`)
    through every round an adapter gives it: throttling of some of its partitions, as AWS-side as
    a refused call (a `ProvisionedThroughputExceededException`), and deferred the same way."""

    reason = AWS_THROTTLED


class TaskTimeout(TransientError):
    """The task ran past its hard time limit; its result, if it ever comes, is discarded."""

    reason = "task_timeout"


class DependencyBusy(Exception):
    """The shared dependency budget is exhausted. Not an error: the consumer defers the record,
    which costs it no attempt."""

    deferral: str | None = None
    """What the deferral's line names as the reason; None: the dependency's budget."""


class MoreToDo(Exception):
    """The task did part of its work (all of it safe to do again) and has more than its time
    allows. Not an error: the consumer re-sends the record carrying `progress`, a small JSON object
    the task reads back from its envelope next time, and the re-send costs it no attempt."""

    def __init__(self, progress: Mapping[str, Any], why: str = "more to do than time allows") -> None:
        super().__init__(why)
        self.progress = dict(progress)


@dataclass(frozen=True)
class Classified:
    transient: bool
    error_class: str
    """Bounded set (exception class or AWS error code): a metric dimension."""
    reason: str
    message: str
    stops_lane: bool = False
    """No record of the lane can succeed until someone fixes the dependency's account (a model the
    lane may not use, a revoked token): the lane pauses instead of spending receives on it."""
    pace: Pace | None = None
    """How the dependency asks to be retried, when it refused the call as over its rate."""


_THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "SlowDown",
        "TransactionConflictException",
        "TransactionInProgressException",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "KMSThrottlingException",
    }
)
_DEPLOYMENT_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "ExpiredToken",
        "ExpiredTokenException",
        "ResourceNotFoundException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "KMSAccessDeniedException",
        "KMSDisabledException",
    }
)
_INPUT_ERRORS = (ValueError, KeyError, TypeError, IndexError)


def _text(exc: BaseException) -> str:
    return (str(exc) or type(exc).__name__)[:MESSAGE_LIMIT]


def _where(exc: BaseException) -> str:
    """The exception's type, where it was raised, and the last line of the pipeline's own code it
    passed through when it was raised elsewhere (a library parsing what a task gave it)."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return type(exc).__name__
    raised = frames[-1]
    text = f"{type(exc).__name__} raised in {_frame(raised)}"
    ours = [frame for frame in frames if "pipeline" in PurePath(frame.filename).parts]
    if ours and ours[-1] is not raised:
        text += f" via {_frame(ours[-1])}"
    return text


def _frame(frame: traceback.FrameSummary) -> str:
    return f"{PurePath(frame.filename).name}:{frame.lineno} ({frame.name})"


def describe(exc: BaseException) -> str:
    """Text about `exc` fit for a log line, a row or a dead letter. The pipeline's own errors and
    AWS's say what they were written to say; any other exception's text is whatever the code that
    raised it put in, often the payload value it choked on (a phone number, a name, a message), so
    it is told by its type and where it was raised instead. A dropped connection says which host."""
    if isinstance(exc, PermanentError | TransientError) or _aws_error(exc) is not None:
        return _text(exc)
    if type(exc).__module__.startswith(("botocore", "urllib3")) or isinstance(exc, TimeoutError | ConnectionError):
        return _text(exc)
    return _where(exc)[:MESSAGE_LIMIT]


def _aws_error(exc: BaseException) -> tuple[str, int] | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, Mapping):
        return None
    error = response.get("Error")
    if not isinstance(error, Mapping):
        return None
    code = str(error.get("Code") or "Unknown")
    metadata: Any = response.get("ResponseMetadata") or {}
    status = int(metadata.get("HTTPStatusCode") or 0) if isinstance(metadata, Mapping) else 0
    return code, status


def _from_aws(exc: BaseException, code: str, status: int) -> Classified:
    transient = code in _THROTTLING_CODES or code in _DEPLOYMENT_CODES or status >= 500 or status == 429
    reason = AWS_THROTTLED if transient else "aws_rejected_input"
    if code in _DEPLOYMENT_CODES:
        reason = "aws_deployment"
    return Classified(transient=transient, error_class=code, reason=reason, message=_text(exc))


def classify(exc: BaseException) -> Classified:
    """Transient or permanent, with a bounded error class for metrics and a reason for the DLQ."""
    name = type(exc).__name__
    if isinstance(exc, PermanentError):
        return Classified(False, name, exc.reason, _text(exc))
    if isinstance(exc, TransientError):
        stops_lane = bool(getattr(exc, "stops_lane", False))
        return Classified(True, name, exc.reason, _text(exc), stops_lane=stops_lane, pace=exc.pace)
    aws = _aws_error(exc)
    if aws is not None:
        return _from_aws(exc, *aws)
    if type(exc).__module__.startswith(("botocore", "urllib3")):
        # Parameter validation is our request being wrong, which no retry changes; every other
        # SDK-level error (connection, read timeout, credentials refresh) is the network.
        transient = name != "ParamValidationError"
        return Classified(transient, name, "sdk_network" if transient else "sdk_invalid_request", _text(exc))
    if isinstance(exc, TimeoutError | ConnectionError):
        return Classified(True, name, "network", _text(exc))
    if isinstance(exc, _INPUT_ERRORS):
        return Classified(False, name, "bad_input", describe(exc))
    return Classified(True, name, "unexpected", describe(exc))
