"""The sweeper's replays onto the lanes: SendMessageBatch in chunks of ten, several at once.

One after another, the sweeper's sends held a sweep to about 150 rows a second; with the chunks of
a page in flight together it replays at the speed the claims are made (domain/sweep/run.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor

from botocore.exceptions import BotoCoreError, ClientError

from pipeline.adapters.lane_queue import BATCH_LIMIT, QueueSender
from pipeline.domain.envelope import Envelope, Outgoing
from pipeline.domain.sweep.inputs import ReplayFailed


class LaneReplays:
    def __init__(self, sender: QueueSender, queue_urls: Mapping[str, str], pool: Executor) -> None:
        self._sender = sender
        self._queue_urls = queue_urls
        self._pool = pool

    def __call__(self, lane: str, envelopes: Sequence[Envelope]) -> set[int]:
        """The positions SQS refused. Raises ReplayFailed when the lane took none of them."""
        offsets = range(0, len(envelopes), BATCH_LIMIT)
        results = list(
            self._pool.map(lambda offset: self._chunk(lane, envelopes[offset : offset + BATCH_LIMIT]), offsets)
        )
        refused: set[int] = set()
        errors: list[Exception] = []
        for offset, result in zip(offsets, results, strict=True):
            if isinstance(result, Exception):
                errors.append(result)
                refused.update(range(offset, min(offset + BATCH_LIMIT, len(envelopes))))
            else:
                refused.update(offset + n for n in result)
        if errors and len(refused) == len(envelopes):
            raise ReplayFailed(str(errors[0]))
        return refused

    def _chunk(self, lane: str, chunk: Sequence[Envelope]) -> set[int] | Exception:
        try:
            failures = self._sender.send_batch(self._queue_urls[lane], [Outgoing(envelope) for envelope in chunk])
        except (BotoCoreError, ClientError) as exc:
            return exc
        refused = {failure.envelope.id for failure in failures}
        return {n for n, envelope in enumerate(chunk) if envelope.id in refused}
