"""`lanectl load` while it runs: what the stack says (stored messages, queue depth) read through the
AWS API, one interval closed at a time, and the report once every answer is in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ops.load.figures import HEADER, Interval, Report, line, summarise
from ops.load.process_stats import cpu_seconds, rss_bytes
from ops.load.traffic import LoadRun, Sent

STORED_GRACE_SECONDS = 30.0
"""After the last send, how long to keep looking for messages not stored yet."""
BATCH_GET = 100


class StackView:
    """Reads the stack's data table and queues through the AWS API, as any operator tool would."""

    def __init__(self, client: Callable[[str], Any], outputs: Mapping[str, str], lanes: Sequence[str]) -> None:
        from ops.resolve import output_prefix
        from pipeline.adapters.sender_key import SenderKey

        self._dynamodb = client("dynamodb")
        self._sqs = client("sqs")
        self._cloudwatch = client("cloudwatch")
        self.table = outputs["DataTableName"]
        self.queues = {lane: outputs[f"{output_prefix(lane)}QueueUrl"] for lane in lanes}
        # A stored message is in its sender's partition, named by their hash under the stack's key.
        self._senders = SenderKey(client("secretsmanager"), outputs["SenderKeyArn"])

    def stored_at(self, items: Sequence[Sent]) -> None:
        """Fill in `stored_at` for messages the consumer has stored."""
        from ops.load.shapes import STATUS
        from pipeline import schema
        from pipeline.adapters.items import from_item, to_item
        from pipeline.tasks.messages import message_key, status_key

        waiting = [s for s in items if s.stored_at is None and s.status == 200]
        for start in range(0, len(waiting), BATCH_GET):
            chunk: dict[tuple[str, str], Sent] = {}
            for sent in waiting[start : start + BATCH_GET]:
                sender = self._senders.hash(sent.delivery.sender)
                keyed = status_key if sent.delivery.item == STATUS else message_key
                key = keyed(sent.delivery.tenant, sent.delivery.message_id, sender)
                chunk[(key[schema.PK], key[schema.SK])] = sent
            request: dict[str, Any] = {
                self.table: {
                    "Keys": [to_item({schema.PK: pk, schema.SK: sk}) for pk, sk in chunk],
                    # A status item's moment is when its latest status was applied.
                    "ProjectionExpression": "#pk, #sk, stored_at, applied_at",
                    "ExpressionAttributeNames": {"#pk": schema.PK, "#sk": schema.SK},
                }
            }
            while request:
                response = self._dynamodb.batch_get_item(RequestItems=request)
                for raw in response.get("Responses", {}).get(self.table, []):
                    item = from_item(raw)
                    found = chunk.get((item[schema.PK], item[schema.SK]))
                    at = item.get("stored_at", item.get("applied_at"))
                    if found is not None and at is not None:
                        found.stored_at = float(at)
                request = response.get("UnprocessedKeys") or {}

    def lane_metric(self, name: str, lane: str, start: int, end: int, statistic: str = "Sum") -> float:
        """`statistic` of the stack's metric `name` for `lane` from `start` to `end` (epoch seconds,
        end excluded), over every series of it naming the lane (RepliesSent from the log filter,
        ModelInputTokens from the lane's own lines)."""
        from datetime import UTC, datetime

        from pipeline import metric_names

        found = self._cloudwatch.list_metrics(MetricName=name, Dimensions=[{"Name": metric_names.LANE, "Value": lane}])
        # An emulator may list a series once per datum: each series is read once.
        series = {
            (m["Namespace"], m["MetricName"], tuple(sorted((d["Name"], d["Value"]) for d in m["Dimensions"]))): m
            for m in found.get("Metrics", [])
        }
        total = 0.0
        for metric in series.values():
            points = self._cloudwatch.get_metric_statistics(
                Namespace=metric["Namespace"],
                MetricName=metric["MetricName"],
                Dimensions=metric["Dimensions"],
                StartTime=datetime.fromtimestamp(start, UTC),
                EndTime=datetime.fromtimestamp(end, UTC),
                Period=60,
                Statistics=[statistic],
            )["Datapoints"]
            total += sum(point[statistic] for point in points)
        return total

    def depth(self) -> dict[str, int]:
        """Messages waiting or in flight per lane (delayed ones are not load yet)."""
        from pipeline.adapters import lane_queue

        depth = {}
        for lane, url in self.queues.items():
            read = lane_queue.depth(self._sqs, url)
            depth[lane] = read.visible + read.in_flight
        return depth


class _Watch:
    """Closes one interval at a time while the load runs: what was answered, stored, queued."""

    def __init__(self, run: LoadRun, stack: StackView | None, pid: int | None, write: Callable[[str], None]) -> None:
        self.run, self.stack, self.pid, self.write = run, stack, pid, write
        self.intervals: list[Interval] = []
        self._cut = 0
        self.cpu_marks: list[float | None] = [None if pid is None else cpu_seconds(pid)]

    def close(self, offset: float) -> None:
        run = self.run
        start = self.intervals[-1].end if self.intervals else run.started_at
        end = run.started_at + offset
        window: list[Sent] = []
        while self._cut < len(run.sent) and run.sent[self._cut].scheduled < end:
            window.append(run.sent[self._cut])
            self._cut += 1
        self._read_stored(window + _recent_unstored(run.sent, self._cut - len(window)))
        interval = summarise(window, start, end)
        if self.stack is not None:
            try:
                interval.queue_depth = self.stack.depth()
            except Exception as exc:  # a figure missing this interval, not a failed run
                self.write(f"  (could not read queue depth: {type(exc).__name__}: {exc})")
        if self.pid is not None:
            self._process_figures(interval, start, end)
        self.intervals.append(interval)
        self.write(line(interval, run.started_at))

    def _read_stored(self, items: list[Sent]) -> None:
        if self.stack is None:
            return
        try:
            self.stack.stored_at(items)
        except Exception as exc:  # a figure missing this interval, not a failed run
            self.write(f"  (could not read stored messages: {type(exc).__name__}: {exc})")

    def _process_figures(self, interval: Interval, start: float, end: float) -> None:
        assert self.pid is not None
        rss = rss_bytes(self.pid)
        interval.rss_mb = None if rss is None else round(rss / 2**20, 1)
        cpu = cpu_seconds(self.pid)
        previous = self.cpu_marks[-1]
        if cpu is not None and previous is not None:
            interval.cpu_percent = round((cpu - previous) / max(1e-6, end - start) * 100, 1)
        self.cpu_marks.append(cpu)

    def wait_for_stored(self) -> int:
        """Keep looking for accepted messages not stored yet, up to the grace; how many never were."""
        if self.stack is None:
            return 0
        deadline = time.monotonic() + STORED_GRACE_SECONDS
        while time.monotonic() < deadline:
            missing = [s for s in self.run.sent if s.status == 200 and s.stored_at is None]
            if not missing:
                break
            self._read_stored(missing)
            time.sleep(1.0)
        return sum(1 for s in self.run.sent if s.status == 200 and s.stored_at is None)

    def final_intervals(self) -> list[Interval]:
        """Every interval summarised again, now that every answer and stored time is known."""
        final = []
        for interval in self.intervals:
            window = [s for s in self.run.sent if interval.start <= s.scheduled < interval.end]
            refreshed = summarise(window, interval.start, interval.end)
            refreshed.queue_depth, refreshed.rss_mb = interval.queue_depth, interval.rss_mb
            refreshed.cpu_percent = interval.cpu_percent
            final.append(refreshed)
        return final

    def cpu_ms_per_webhook(self, accepted: int) -> float | None:
        first = self.cpu_marks[0]
        if self.pid is None or first is None or not accepted:
            return None
        spent = (cpu_seconds(self.pid) or first) - first
        return round(spent * 1000 / accepted, 2)


def measure(
    run: LoadRun,
    *,
    stack: StackView | None,
    pid: int | None,
    interval_seconds: float,
    write: Callable[[str], None],
) -> Report:
    """Run the load, printing one line per interval, and return every figure."""
    watch = _Watch(run, stack, pid, write)
    write(HEADER)
    finished = threading.Event()

    def report() -> None:
        boundary = interval_seconds
        while not finished.wait(max(0.0, boundary - run.elapsed())):
            watch.close(boundary)
            boundary += interval_seconds

    reporter = threading.Thread(target=report, name="load-report", daemon=True)
    run.started_at = run._clock()
    reporter.start()
    try:
        run.run()
    finally:
        finished.set()
        reporter.join()
    watch.close(run.elapsed())
    not_stored = watch.wait_for_stored()
    total = summarise(run.sent, run.started_at, run.started_at + run.seconds)
    report_ = Report(run.rate, run.seconds, run.businesses, run.size, watch.final_intervals(), total, not_stored)
    report_.cpu_ms_per_webhook = watch.cpu_ms_per_webhook(total.statuses.get("200", 0))
    report_.shape = run.shape
    return report_


def _recent_unstored(sent: Sequence[Sent], cut: int) -> list[Sent]:
    """Accepted deliveries of earlier intervals not seen stored yet (bounded: the last 2,000)."""
    return [s for s in sent[max(0, cut - 2000) : cut] if s.status == 200 and s.stored_at is None]
