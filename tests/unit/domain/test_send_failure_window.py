"""Sends whose outcome is unknown (no answer, or a 5xx that did not say Meta took nothing) count
as Meta failing in the lane's failure window, so a storm of them pauses the lane, though the
reply task settles each one itself and never resends it."""

from __future__ import annotations

import pytest

from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.dependencies.failure_rate import FailureWindow, WatchedSender
from pipeline.domain.dependencies.lane_pause import META_FAILING
from pipeline.settings.lane_policy import FailureRatePause

REPLY_TO = ms.ReplyTo("whatsapp", "1098765", "15551230001")


class Answering:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def send(self, reply_to, text, callback, *, timeout):
        raise self.error


def _window() -> FailureWindow:
    return FailureWindow(FailureRatePause(window_seconds=60, min_calls=3, failure_share=0.5), lambda: 1000.0)


@pytest.mark.parametrize(
    "error",
    [ms.error_for(500, {"error": {"code": 1}}), ms.error_for(502, {}), ms.OutcomeUnknown("no answer from Meta")],
)
def test_sends_with_unknown_outcomes_trip_the_window(error):
    window = _window()
    sender = WatchedSender(Answering(error), window)
    for _ in range(3):
        with pytest.raises(ms.OutcomeUnknown):
            sender.send(REPLY_TO, "hi", "ref", timeout=1.0)
    assert window.tripped() == (META_FAILING,)


def test_a_reply_meta_rejects_for_good_is_not_meta_failing():
    window = _window()
    sender = WatchedSender(Answering(ms.error_for(400, {"error": {"code": 131047}})), window)
    for _ in range(3):
        with pytest.raises(ms.SendRejected):
            sender.send(REPLY_TO, "hi", "ref", timeout=1.0)
    assert window.tripped() == ()
