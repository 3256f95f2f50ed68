"""`lanectl load`: signed Meta webhooks at a set rate against a running pipeline, with figures.

    lanectl load --rate 50 --for 10m                 # against `lanectl local` (127.0.0.1:8787)
    lanectl load --rate 50 --for 60s --json out.json --plot out.png

Open loop, as Meta sends: a delivery leaves at its scheduled time whether or not earlier ones were
answered (up to --connections at once; one that finds none free is counted as late). Each is a
WhatsApp text of about --size bytes from one of --businesses, signed with the stack's app secret.
Every --interval it prints answers by status, the door's p50/p99, sent-to-stored p50/p99 (the
message item's `stored_at` read back from the data table, against the moment it was sent), the
lanes' queue depth and the runtime's memory (--pid, or the process serving --url on this machine).

Traffic goes only to loopback addresses, and stops by itself: the count is rate times duration.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import queue
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ops import meta_payloads
from ops.runtime.client import sign
from ops.runtime.process_stats import cpu_seconds, rss_bytes, serving_pid

DEFAULT_URL = "http://127.0.0.1:8787"
MAX_RATE = 2000
MAX_SECONDS = 3600
REQUEST_TIMEOUT_SECONDS = 30.0
"""API Gateway's own integration limit: no answer is worth waiting for past it."""
STORED_GRACE_SECONDS = 30.0
"""After the last send, how long to keep looking for messages not stored yet."""
BATCH_GET = 100


class LoadError(Exception):
    """A bad argument or a target this tool refuses; the CLI prints it and exits 2."""


def loopback_only(url: str) -> tuple[str, int]:
    """(host, port) of an http:// URL on this machine; anything else is refused before a packet."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise LoadError(f"--url must be http://HOST:PORT on this machine, got {url!r}")
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(parts.hostname, parts.port or 80)}
    except socket.gaierror as exc:
        raise LoadError(f"cannot resolve {parts.hostname!r}: {exc}") from None
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise LoadError(f"{url} is not a loopback address: load is only ever sent to this machine")
    return parts.hostname, parts.port or 80


def duration_seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        value = float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"a duration like 90s, 10m or 600, got {text!r}") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"duration must be in (0, {MAX_SECONDS}] seconds, got {text!r}")
    return value


def rate_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--rate must be a number, got {text!r}") from None
    if not 0 < value <= MAX_RATE:
        raise argparse.ArgumentTypeError(f"--rate must be in (0, {MAX_RATE}] webhooks a second, got {text!r}")
    return value


# ---------------------------------------------------------------------------------------- what is sent


def text_of(size: int, seed: int) -> str:
    words = ("order", "status", "please", "thanks", "delivery", "tomorrow", "refund", "hello", "where", "is")
    out: list[str] = []
    length = 0
    index = seed
    while length < size:
        word = words[index % len(words)]
        out.append(word)
        length += len(word) + 1
        index = index * 31 + 7
    return " ".join(out)[:size]


@dataclass(frozen=True)
class Delivery:
    tenant: str
    message_id: str
    body: bytes


def deliveries(businesses: int, size: int) -> Iterable[Delivery]:
    """WhatsApp texts of about `size` bytes, round-robin over `businesses` accounts."""
    run = uuid.uuid4().hex[:8]
    sequence = 0
    while True:
        tenant = f"waba-load-{sequence % businesses:03d}"
        message_id = f"wamid.load.{run}.{sequence}"
        payload = meta_payloads.whatsapp_message(tenant, message_id, "", sender=f"4477009{sequence % 100000:05d}")
        overhead = len(json.dumps(payload).encode())
        payload["entry"][0]["changes"][0]["value"]["messages"][0]["text"]["body"] = text_of(
            max(1, size - overhead), sequence
        )
        yield Delivery(tenant, message_id, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        sequence += 1


# ---------------------------------------------------------------------------------------- what is seen


@dataclass
class Sent:
    delivery: Delivery
    scheduled: float
    """Wall-clock time it was due to leave."""
    started: float = 0.0
    status: int | None = None
    """None: the connection failed or timed out."""
    latency: float = 0.0
    late: bool = False
    answered: bool = False
    stored_at: float | None = None


def percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


@dataclass
class Interval:
    start: float
    end: float
    sent: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    late: int = 0
    door_p50_ms: float | None = None
    door_p99_ms: float | None = None
    stored: int = 0
    stored_p50_s: float | None = None
    stored_p99_s: float | None = None
    queue_depth: dict[str, int] = field(default_factory=dict)
    rss_mb: float | None = None
    cpu_percent: float | None = None
    """The runtime's CPU over the interval, in percent of one core."""

    def as_dict(self) -> dict[str, Any]:
        # asdict would rebuild the Counter from (status, count) pairs, counting the pairs.
        return {**asdict(self), "statuses": dict(self.statuses)}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def summarise(window: Sequence[Sent], start: float, end: float) -> Interval:
    """Figures for the deliveries scheduled in [start, end)."""
    interval = Interval(start, end, sent=len(window))
    answered = [s.latency for s in window if s.status is not None]
    for s in window:
        interval.statuses["pending" if not s.answered else "failed" if s.status is None else str(s.status)] += 1
        interval.late += s.late
    interval.door_p50_ms = _ms(percentile(answered, 0.50))
    interval.door_p99_ms = _ms(percentile(answered, 0.99))
    waits = [s.stored_at - s.started for s in window if s.stored_at is not None]
    interval.stored = len(waits)
    p50, p99 = percentile(waits, 0.50), percentile(waits, 0.99)
    interval.stored_p50_s = None if p50 is None else round(p50, 3)
    interval.stored_p99_s = None if p99 is None else round(p99, 3)
    return interval


# ---------------------------------------------------------------------------------------- the sender


class _Connections:
    """Keep-alive HTTP connections, one per sending thread."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._local = threading.local()

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> int:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=REQUEST_TIMEOUT_SECONDS)
            self._local.connection = connection
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.getheader("connection", "").lower() == "close":
                connection.close()
                self._local.connection = None
            return response.status
        except BaseException:
            connection.close()
            self._local.connection = None
            raise


class LoadRun:
    def __init__(
        self,
        *,
        url: str,
        app_secret: str,
        rate: float,
        seconds: float,
        businesses: int = 30,
        size: int = 1500,
        connections: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.host, self.port = loopback_only(url)
        self.app_secret = app_secret
        self.rate = rate
        self.seconds = seconds
        self.count = max(1, int(rate * seconds))
        self.businesses = businesses
        self.size = size
        self._connections = _Connections(self.host, self.port)
        self._pool_size = connections
        self._clock = clock
        self.sent: list[Sent] = []
        self._work: queue.Queue[Sent | None] = queue.Queue()
        self._idle = threading.Semaphore(connections)
        self._stop = threading.Event()
        self.started_at = 0.0

    def stop(self) -> None:
        self._stop.set()

    def elapsed(self) -> float:
        return self._clock() - self.started_at

    def _send(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            headers = {
                "content-type": "application/json",
                "x-hub-signature-256": sign(self.app_secret, item.delivery.body),
            }
            item.started = self._clock()
            began = time.monotonic()
            try:
                item.status = self._connections.post("/webhooks/meta", item.delivery.body, headers)
            except (OSError, http.client.HTTPException):
                item.status = None
            item.latency = time.monotonic() - began
            item.answered = True
            self._idle.release()

    def run(self) -> None:
        """Send `count` deliveries on schedule, then wait for their answers."""
        threads = [threading.Thread(target=self._send, daemon=True) for _ in range(self._pool_size)]
        for thread in threads:
            thread.start()
        source = iter(deliveries(self.businesses, self.size))
        self.started_at = self.started_at or self._clock()
        origin = time.monotonic()
        try:
            for index in range(self.count):
                due = index / self.rate
                wait = due - (time.monotonic() - origin)
                if wait > 0 and self._stop.wait(wait):
                    break
                if self._stop.is_set():
                    break
                item = Sent(next(source), scheduled=self.started_at + due)
                # A delivery that finds every connection busy leaves as soon as one frees.
                item.late = not self._idle.acquire(blocking=False)
                if item.late:
                    self._idle.acquire()
                self.sent.append(item)
                self._work.put(item)
        finally:
            for _ in threads:
                self._work.put(None)
            deadline = time.monotonic() + REQUEST_TIMEOUT_SECONDS + 1
            for thread in threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))


# ---------------------------------------------------------------------------------------- what the stack says


class StackView:
    """Reads the stack's data table and queues through the AWS API, as any operator tool would."""

    def __init__(self, client: Callable[[str], Any], outputs: Mapping[str, str], lanes: Sequence[str]) -> None:
        from ops.resolve import output_prefix

        self._dynamodb = client("dynamodb")
        self._sqs = client("sqs")
        self.table = outputs["DataTableName"]
        self.queues = {lane: outputs[f"{output_prefix(lane)}QueueUrl"] for lane in lanes}

    def stored_at(self, items: Sequence[Sent]) -> None:
        """Fill in `stored_at` for messages the consumer has stored."""
        from pipeline import schema
        from pipeline.tasks.messages import message_key

        waiting = [s for s in items if s.stored_at is None and s.status == 200]
        for start in range(0, len(waiting), BATCH_GET):
            chunk = {s.delivery.message_id: s for s in waiting[start : start + BATCH_GET]}
            keys = [
                {k: {"S": v} for k, v in message_key(s.delivery.tenant, s.delivery.message_id).items()}
                for s in chunk.values()
            ]
            request: dict[str, Any] = {
                self.table: {
                    "Keys": keys,
                    "ProjectionExpression": "#pk, stored_at",
                    "ExpressionAttributeNames": {"#pk": schema.PK},
                }
            }
            while request:
                response = self._dynamodb.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self.table, []):
                    message_id = item[schema.PK]["S"].split("#", 2)[2]
                    if message_id in chunk and "stored_at" in item:
                        chunk[message_id].stored_at = float(item["stored_at"]["N"])
                request = response.get("UnprocessedKeys") or {}

    def depth(self) -> dict[str, int]:
        depth = {}
        for lane, url in self.queues.items():
            attributes = self._sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            depth[lane] = int(attributes["ApproximateNumberOfMessages"]) + int(
                attributes["ApproximateNumberOfMessagesNotVisible"]
            )
        return depth


# ---------------------------------------------------------------------------------------- the report


@dataclass
class Report:
    rate: float
    seconds: float
    businesses: int
    size: int
    intervals: list[Interval]
    total: Interval
    not_stored: int
    cpu_ms_per_webhook: float | None = None
    """The runtime's CPU time from the first send until every accepted message was stored (or the
    grace ran out), over the accepted webhooks: door, consumer, sweeper and emulator together."""

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "intervals": [i.as_dict() for i in self.intervals],
            "total": self.total.as_dict(),
        }


HEADER = (
    f"{'t (s)':>7} {'sent':>5} {'200':>5} {'429':>5} {'5xx':>5} {'fail':>5} {'late':>5} "
    f"{'door p50':>9} {'p99 ms':>7} {'stored p50':>11} {'p99 s':>6} {'queued':>7} {'rss MB':>7} {'cpu %':>6}"
)


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def line(interval: Interval, origin: float) -> str:
    statuses = interval.statuses
    five = sum(v for k, v in statuses.items() if k.startswith("5"))
    return (
        f"{interval.end - origin:7.0f} {interval.sent:5d} {statuses.get('200', 0):5d} {statuses.get('429', 0):5d} "
        f"{five:5d} {statuses.get('failed', 0):5d} {interval.late:5d} "
        f"{_fmt(interval.door_p50_ms, '.1f'):>9} {_fmt(interval.door_p99_ms, '.1f'):>7} "
        f"{_fmt(interval.stored_p50_s, '.2f'):>11} {_fmt(interval.stored_p99_s, '.2f'):>6} "
        f"{sum(interval.queue_depth.values()) if interval.queue_depth else '-':>7} "
        f"{_fmt(interval.rss_mb, '.0f'):>7} {_fmt(interval.cpu_percent, '.0f'):>6}"
    )


def plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    origin = report.intervals[0].start if report.intervals else 0.0
    t = [i.end - origin for i in report.intervals]
    figure, axes = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    axes[0].plot(t, [i.statuses.get("200", 0) / (i.end - i.start) for i in report.intervals], label="200")
    axes[0].plot(t, [i.statuses.get("429", 0) / (i.end - i.start) for i in report.intervals], label="429")
    others = [
        sum(v for k, v in i.statuses.items() if k not in ("200", "429")) / (i.end - i.start) for i in report.intervals
    ]
    axes[0].plot(t, others, label="5xx / failed")
    axes[0].set_ylabel("answers / s")
    axes[0].legend(loc="upper right")
    axes[1].plot(t, [i.door_p50_ms for i in report.intervals], label="p50")
    axes[1].plot(t, [i.door_p99_ms for i in report.intervals], label="p99")
    axes[1].axhline(250, color="grey", linestyle=":", label="250 ms")
    axes[1].set_ylabel("door (ms)")
    axes[1].legend(loc="upper right")
    axes[2].plot(t, [i.stored_p50_s for i in report.intervals], label="p50")
    axes[2].plot(t, [i.stored_p99_s for i in report.intervals], label="p99")
    axes[2].set_ylabel("sent→stored (s)")
    axes[2].legend(loc="upper right")
    axes[3].plot(t, [i.rss_mb for i in report.intervals], label="runtime RSS (MB)")
    axes[3].plot(t, [sum(i.queue_depth.values()) for i in report.intervals], label="messages queued")
    axes[3].set_xlabel("seconds")
    axes[3].legend(loc="upper right")
    figure.suptitle(f"{report.rate:g} webhooks/s for {report.seconds:g} s, {report.businesses} businesses")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)


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
    return report_


def _recent_unstored(sent: Sequence[Sent], cut: int) -> list[Sent]:
    """Accepted deliveries of earlier intervals not seen stored yet (bounded: the last 2,000)."""
    return [s for s in sent[max(0, cut - 2000) : cut] if s.status == 200 and s.stored_at is None]


# ---------------------------------------------------------------------------------------- the command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=rate_argument, default=50.0, help="webhooks a second (default 50)")
    parser.add_argument(
        "--for", dest="seconds", type=duration_seconds, default=60.0, help="how long: 90s, 10m (default 60s)"
    )
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the API, on this machine (default {DEFAULT_URL})")
    parser.add_argument("--businesses", type=int, default=30, help="WhatsApp accounts the texts come from (30)")
    parser.add_argument("--size", type=int, default=1500, help="bytes per delivery (default 1500)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds per figures line (default 10)")
    parser.add_argument("--connections", type=int, default=64, help="deliveries in flight at most (default 64)")
    parser.add_argument("--pid", type=int, help="process whose memory to report (default: the one serving --url)")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--plot", type=Path, help="draw the run into this PNG")


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.businesses <= 10_000:
        raise LoadError(f"--businesses must be 1..10000, got {args.businesses}")
    if not 400 <= args.size <= 256 * 1024:
        raise LoadError(f"--size must be 400..262144 bytes, got {args.size}")
    if not 1 <= args.connections <= 512:
        raise LoadError(f"--connections must be 1..512, got {args.connections}")
    if not 0.5 <= args.interval <= 600:
        raise LoadError(f"--interval must be 0.5..600 seconds, got {args.interval}")


def connect(
    env_name: str = "local", *, endpoint_url: str | None = None, region: str | None = None, profile: str | None = None
) -> tuple[str, StackView]:
    """The deployed stack's Meta app secret and a view of its data table and lanes."""
    from ops.aws import Aws, target
    from ops.resolve import resolve
    from stacks.config.environments import get_environment

    env = get_environment(env_name)
    chosen = target(env, endpoint_url=endpoint_url, region=region, profile=profile, environ={})
    aws = Aws(chosen)
    deployment = resolve(aws.client("cloudformation"), env, chosen.where)
    secret = json.loads(
        aws.client("secretsmanager").get_secret_value(SecretId=deployment.output("MetaSecretArn"))["SecretString"]
    )
    return secret["app_secret"], StackView(aws.client, deployment.outputs, env.lane_names)


def main(args: argparse.Namespace) -> int:
    import sys

    def write(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    try:
        _check(args)
        host, port = loopback_only(args.url)
        secret, stack = connect(
            getattr(args, "env", None) or "local",
            endpoint_url=getattr(args, "endpoint_url", None),
            region=getattr(args, "region", None),
            profile=getattr(args, "profile", None),
        )
        run = LoadRun(
            url=args.url,
            app_secret=secret,
            rate=args.rate,
            seconds=args.seconds,
            businesses=args.businesses,
            size=args.size,
            connections=args.connections,
        )
    except LoadError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    pid = args.pid or serving_pid(port)
    write(
        f"{run.count} signed WhatsApp texts of {args.size} B from {args.businesses} businesses to "
        f"http://{host}:{port}/webhooks/meta at {args.rate:g}/s for {args.seconds:g} s"
        + (f"; memory of pid {pid}" if pid else "")
    )
    try:
        report = measure(run, stack=stack, pid=pid, interval_seconds=args.interval, write=write)
    except KeyboardInterrupt:
        run.stop()
        sys.stderr.write("interrupted\n")
        return 130
    total = report.total
    write(
        f"total: {total.sent} sent, answers {dict(sorted(total.statuses.items()))}, late {total.late}; "
        f"door p50 {_fmt(total.door_p50_ms, '.1f')} ms p99 {_fmt(total.door_p99_ms, '.1f')} ms; "
        f"stored {total.stored} (p50 {_fmt(total.stored_p50_s, '.2f')} s, p99 {_fmt(total.stored_p99_s, '.2f')} s), "
        f"accepted but not stored {report.not_stored}; runtime CPU per webhook "
        f"{_fmt(report.cpu_ms_per_webhook, '.1f')} ms"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=1))
    if args.plot and report.intervals:
        plot(report, args.plot)
    return 0
