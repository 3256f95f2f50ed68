"""A lane's dependency failing at a sustained rate: a sliding window of one consumer instance's
calls to its model and to Meta, and the wrappers that feed it.

Only the dependency's own trouble counts as a failure (`FAILING`: unavailable, timed out, a 5xx,
unreachable; for Meta, a send whose outcome is unknown too: no answer, or a 5xx that did not say
it took nothing, which the reply task never resends but which says Meta is in trouble); a call
that succeeded counts as a call; anything else (a validation error, a rate
limit, a token refused, which pauses the lane by itself) is not counted at all. Once the share of
failures over `window_seconds` reaches `failure_share` with at least `min_calls` calls, the window
is tripped: the consumer holds the failing records without spending attempts (domain/consumer/settling.py)
and pauses its lane for the reason MODEL_FAILING or META_FAILING (domain/dependencies/lane_pause.py).

Why per instance, with no write: at prod's peak an engagement instance makes about three model
calls a second (25 a second over some 8 busy slots) and an ai instance a model call and a send about
every 4 s (6 turns a second over 24), so each reaches its lane's `min_calls` (20 in 60 s; 10 in
120 s) within a minute, and the first instance to see its dependency failing stops the whole lane.
At a trickle (fewer than `min_calls` calls in the window per instance) no instance trips: failing
records then retry with backoff and may reach the DLQ, as before; a lane-wide count would need a
write per failure (a shared counter in the state table) and is not made.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from pipeline.domain.dependencies.lane_pause import META, META_FAILING, MODEL, MODEL_FAILING
from pipeline.domain.dependencies.meta_send import NotSent, OutcomeUnknown, ReplyTo, SendRefused, Sent
from pipeline.domain.dependencies.model import Completion, ModelTimeout, ModelUnavailable
from pipeline.domain.errors import classify
from pipeline.settings.lane_policy import FailureRatePause

FAILING = {
    MODEL: frozenset({ModelUnavailable.reason, ModelTimeout.reason}),
    META: frozenset({SendRefused.reason, NotSent.reason}),
}
"""By dependency: the reasons (domain/errors.py Classified.reason) that are the dependency's own trouble."""
REASON = {MODEL: MODEL_FAILING, META: META_FAILING}


class FailureWindow:
    """Per consumer instance; thread-safe (a task's call may run on the time limit's thread)."""

    def __init__(self, policy: FailureRatePause, clock: Callable[[], float]) -> None:
        self._policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[str, deque[tuple[float, bool]]] = {MODEL: deque(), META: deque()}

    def called(self, dependency: str, failed: bool) -> None:
        with self._lock:
            calls = self._calls[dependency]
            calls.append((self._clock(), failed))
            self._trim(calls)

    def tripped(self) -> tuple[str, ...]:
        """The pause reasons of the dependencies failing at the threshold now."""
        with self._lock:
            found = []
            for dependency, calls in self._calls.items():
                self._trim(calls)
                failures = sum(1 for _, failed in calls if failed)
                if len(calls) >= self._policy.min_calls and failures >= self._policy.failure_share * len(calls):
                    found.append(REASON[dependency])
            return tuple(found)

    def holds(self, reason: str) -> str | None:
        """The pause reason a record failing with `reason` is held for, when that dependency's
        window is tripped; None otherwise."""
        for dependency, reasons in FAILING.items():
            if reason in reasons and REASON[dependency] in self.tripped():
                return REASON[dependency]
        return None

    def forget(self) -> None:
        """After the lane paused: a resumed lane starts with a clean window."""
        with self._lock:
            for calls in self._calls.values():
                calls.clear()

    def _trim(self, calls: deque[tuple[float, bool]]) -> None:
        since = self._clock() - self._policy.window_seconds
        while calls and calls[0][0] < since:
            calls.popleft()


def _note(window: FailureWindow, dependency: str, exc: BaseException) -> None:
    # A storm of 5xx answers must still pause the lane, as it did when a 5xx was a refusal: the
    # reply task settles these itself (never resent), so no record fails to show it.
    if isinstance(exc, OutcomeUnknown) or classify(exc).reason in FAILING[dependency]:
        window.called(dependency, failed=True)


class WatchedModel:
    """A lane's model whose calls are counted in the window."""

    def __init__(self, model: object, window: FailureWindow) -> None:
        self._model = model
        self._window = window

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        try:
            answer = self._model.complete(prompt, timeout=timeout)  # type: ignore[attr-defined]
        except Exception as exc:
            _note(self._window, MODEL, exc)
            raise
        self._window.called(MODEL, failed=False)
        return answer


class WatchedSender:
    """Meta's send APIs, with each send counted in the window."""

    def __init__(self, sender: object, window: FailureWindow) -> None:
        self._sender = sender
        self._window = window

    def send(self, reply_to: ReplyTo, text: str, callback: str, *, timeout: float) -> Sent:
        try:
            sent = self._sender.send(reply_to, text, callback, timeout=timeout)  # type: ignore[attr-defined]
        except Exception as exc:
            _note(self._window, META, exc)
            raise
        self._window.called(META, failed=False)
        return sent
