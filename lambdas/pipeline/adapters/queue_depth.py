"""Whether a lane has a backlog, read at most once per lane per sweep.

Backlog counts everything the lane still holds: visible, in flight and delayed (a deferred message
sits delayed; its row is waiting, not lost). The figures are approximate, which is fine here: the
question is only "is anything queued".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

BACKLOG_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


class LaneBacklog:
    """One per sweep: the answers are cached for the run, never across runs."""

    def __init__(self, sqs: Any, queue_urls: Mapping[str, str], log: Any) -> None:
        self._sqs = sqs
        self._queue_urls = queue_urls
        self._log = log
        self._busy: dict[str, bool] = {}

    def busy(self, lane: str) -> bool:
        if lane not in self._busy:
            self._busy[lane] = self._read(lane)
        return self._busy[lane]

    def _read(self, lane: str) -> bool:
        url = self._queue_urls.get(lane)
        if url is None:
            return False
        try:
            attributes = self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(BACKLOG_ATTRIBUTES))
        except (BotoCoreError, ClientError) as exc:
            # Unknown depth counts as busy: during an SQS incident the sweep should not pile
            # replays onto the queue. Patience still bounds how long a lost row waits.
            self._log.warning(
                "could not read the lane's depth; treating it as busy", extra={"lane": lane, "error": str(exc)}
            )
            return True
        values = attributes.get("Attributes", {})
        return sum(int(values.get(name, 0)) for name in BACKLOG_ATTRIBUTES) > 0
