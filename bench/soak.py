"""`make soak`: the local runtime under sustained load, measured from outside, and its section of
bench/REPORT.md.

    python -m bench.soak                       # every shape 10 min at 50/s, a ramp, a stop under load
    python -m bench.soak --rate 25 --for 120   # any other rate and length
    python -m bench.soak --shape one-to-many --for 90   # one shape (or several, comma-separated)

1. Soak, once per traffic shape (--shape, ops/load/shapes.py: WhatsApp texts from many customers,
   one customer writing to many businesses, a customer with a long history, a new customer per
   message, statuses for earlier replies, a mix of WhatsApp, Messenger and Instagram, bursts of
   texts answered by auto-reply with the model taking --model-latency ms), each in a
   fresh `lanectl local` in its own process: `lanectl load` at --rate for --for seconds (signed
   deliveries of 1.5 KB from 30 businesses), with figures every 10 s: answers by status, door
   p50/p99, sent-to-stored p50/p99, queue depth, the runtime's memory and CPU.
2. Ramp (WhatsApp texts): --step seconds at each of --ramp rates, up to 100/s, to find where the
   stage starts answering 429 and where the door's latency bends.
3. Stop: Ctrl-C while deliveries still arrive; how long it takes, whether the summary came, what
   was left in the temporary directory.

Traffic goes to 127.0.0.1 only, bounded in count and time. Figures are printed and written
(bench/report/soak.json, soak-<shape>.png, soak.md, and REPORT.md; with --no-report, only printed);
nothing is asserted (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.drive.launch import LaunchFailed, launch
from ops.load import command as load
from ops.load.shapes import BURST_CUSTOMERS, BURST_TEXTS
from stacks.config.environments import ENVIRONMENTS, LOCAL_SHOP

ROOT = Path(__file__).resolve().parents[1]
REPORT_DIR = ROOT / "bench" / "report"
REPORT = ROOT / "bench" / "REPORT.md"
BEGIN, END = "<!-- soak -->", "<!-- /soak -->"
SOAK_RETENTION_SECONDS = 60
"""Data kept this long during the soak: shorter than the warm-up, so the emulator's tables have
reached their steady size when memory is first judged."""
WARM_UP_FRACTION = 0.2
"""Memory is judged flat against what the runtime held once this share of the soak had passed."""
DOOR_P99_GOAL_MS = 250
"""The door's p99 the embedded default must hold at 50/s; the ramp reports where it passes it."""
AUTO_REPLY = "auto-reply"
AUTO_REPLY_MODEL_MS = 1000.0
"""How long the model takes to answer in the auto-reply soak (`--model-latency`): a short reply's
order from Bedrock. The other shapes start no turn, so the model's time does not touch them."""
METRIC_LAG_SECONDS = 15
"""The runtime mirrors its metrics every few seconds: a window is read once this long has passed."""
AI_DRAIN_SECONDS = 120.0
"""After the load, how long the auto-reply soak waits for the ai lane to answer what is queued."""


class LaneCount:
    """The ai lane's replies sent and model calls, read from the stack's CloudWatch every half
    minute while the soak runs: the local mirror keeps two minutes, the soak lasts ten."""

    def __init__(self, stack: load.StackView, lane: str = "ai") -> None:
        self.stack, self.lane = stack, lane
        self.replies = 0.0
        self.model_calls = 0.0
        self._since = int(time.time())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lane-count", daemon=True)

    def start(self) -> LaneCount:
        self._thread.start()
        return self

    def _read(self, until: int) -> None:
        from pipeline import metric_names

        if until <= self._since:
            return
        self.replies += self.stack.lane_metric(metric_names.REPLIES_SENT, self.lane, self._since, until)
        self.model_calls += self.stack.lane_metric(
            metric_names.MODEL_INPUT_TOKENS, self.lane, self._since, until, "SampleCount"
        )
        self._since = until

    def _loop(self) -> None:
        while not self._stop.wait(30):
            self._read(int(time.time()) - METRIC_LAG_SECONDS)

    def finish(self) -> dict[str, Any]:
        """Wait for the lane to empty (up to AI_DRAIN_SECONDS), then count the rest."""
        self._stop.set()
        self._thread.join()
        deadline = time.monotonic() + AI_DRAIN_SECONDS
        while time.monotonic() < deadline and self.stack.depth().get(self.lane, 0):
            time.sleep(1.0)
        drained = not self.stack.depth().get(self.lane, 0)
        time.sleep(METRIC_LAG_SECONDS)
        self._read(int(time.time()) + 1)
        return {"replies": int(self.replies), "model_calls": int(self.model_calls), "ai_drained": drained}


@dataclass
class Runtime:
    process: subprocess.Popen[str]
    api_url: str
    aws_endpoint: str
    tmp: Path
    lines: list[str] = field(default_factory=list)


def start(tmp: Path, retention_seconds: int | None, model_latency_ms: float | None = None) -> Runtime:
    try:
        launched = launch(
            tmp / "logs",
            {"TMPDIR": str(tmp)},
            own_session=True,
            retention_seconds=retention_seconds,
            model_latency_ms=model_latency_ms,
        )
    except LaunchFailed as exc:
        raise SystemExit(str(exc)) from None
    return Runtime(launched.process, launched.api_url, launched.aws_endpoint, tmp, launched.lines)


def _stack(runtime: Runtime) -> tuple[str, load.StackView]:
    return load.connect("local", endpoint_url=runtime.aws_endpoint)


def soak(runtime: Runtime, rate: float, seconds: float, shape: str = "texts") -> tuple[load.Report, dict[str, Any]]:
    """The shape's report, and for `auto-reply` what the ai lane did with it."""
    secret, stack = _stack(runtime)
    run = load.LoadRun(url=runtime.api_url, app_secret=secret, rate=rate, seconds=seconds, connections=64, shape=shape)
    print(f"\n== soak ({shape}): {rate:g}/s offered for {seconds:g} s", flush=True)
    count = LaneCount(stack).start() if shape == AUTO_REPLY else None
    report = load.measure(run, stack=stack, pid=runtime.process.pid, interval_seconds=10, write=print)
    if count is None:
        return report, {}
    turns = count.finish()
    turns["bursts"] = report.total.statuses.get("200", 0) // BURST_TEXTS
    print(f"  auto-reply: {turns}", flush=True)
    return report, turns


def ramp(runtime: Runtime, rates: list[float], step: float) -> list[dict[str, Any]]:
    secret, stack = _stack(runtime)
    steps = []
    print(f"\n== ramp: {', '.join(f'{r:g}' for r in rates)} /s, {step:g} s each", flush=True)
    for rate in rates:
        run = load.LoadRun(url=runtime.api_url, app_secret=secret, rate=rate, seconds=step, connections=64)
        report = load.measure(run, stack=None, pid=runtime.process.pid, interval_seconds=step, write=lambda _: None)
        total = report.total
        refused = total.statuses.get("429", 0)
        other = sum(v for k, v in total.statuses.items() if k not in ("200", "429"))
        figures = {
            "rate": rate,
            "sent": total.sent,
            "accepted": total.statuses.get("200", 0),
            "throttled": refused,
            "other": other,
            "door_p50_ms": total.door_p50_ms,
            "door_p99_ms": total.door_p99_ms,
            "queued_after": sum(stack.depth().values()),
        }
        steps.append(figures)
        print(
            f"  {rate:5g}/s: {figures['accepted']} accepted, {refused} answered 429, {other} other; door p50 "
            f"{total.door_p50_ms} ms p99 {total.door_p99_ms} ms; {figures['queued_after']} queued after",
            flush=True,
        )
    return steps


def stop_under_load(runtime: Runtime, rate: float) -> dict[str, Any]:
    secret, _ = _stack(runtime)
    run = load.LoadRun(url=runtime.api_url, app_secret=secret, rate=rate, seconds=60, connections=32)
    sender = threading.Thread(target=run.run, daemon=True)
    sender.start()
    time.sleep(10)
    pressed = time.monotonic()
    runtime.process.send_signal(signal.SIGINT)
    try:
        code: int | None = runtime.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = None
        runtime.process.kill()
    took = time.monotonic() - pressed
    run.stop()
    time.sleep(0.5)
    leftovers = sorted(p.name for p in runtime.tmp.iterdir() if p.name.startswith("lanes-"))
    figures = {
        "offered_rate": rate,
        "seconds_to_exit": round(took, 2),
        "exit_code": code,
        "summary_printed": "Summary" in runtime.lines,
        "temporary_leftovers": leftovers,
    }
    print(f"\n== stop under load ({rate:g}/s): {figures}", flush=True)
    return figures


def _memory_growth(report: load.Report) -> tuple[float | None, float | None, float | None]:
    samples = [i.rss_mb for i in report.intervals if i.rss_mb is not None]
    if len(samples) < 3:
        return None, None, None
    warm = samples[max(1, int(len(samples) * WARM_UP_FRACTION))]
    last = samples[-1]
    return warm, last, round((last - warm) / warm * 100, 1)


def _machine_cpu_percent(report: load.Report) -> float | None:
    """The runtime's mean CPU over the soak, in percent of the whole machine (every core)."""
    samples = [i.cpu_percent for i in report.intervals if i.cpu_percent is not None and i.sent]
    if not samples:
        return None
    return round(sum(samples) / len(samples) / (os.cpu_count() or 1), 1)


def _summary_row(report: load.Report) -> str:
    total = report.total
    warm, last, growth = _memory_growth(report)
    intervals = [i for i in report.intervals if i.sent]
    worst_p99 = max((i.door_p99_ms or 0 for i in intervals), default=None)
    worst_stored = max((i.stored_p99_s or 0 for i in intervals), default=None)
    other = sum(v for k, v in total.statuses.items() if k not in ("200", "429"))
    queued = sum(intervals[-1].queue_depth.values()) if intervals and intervals[-1].queue_depth else "-"
    growth_text = "-" if growth is None else f"{growth:+}"  # a run shorter than its memory samples
    return (
        f"| {report.shape} | {total.sent} | {total.statuses.get('200', 0)} | {total.statuses.get('429', 0)} | {other} "
        f"| {total.door_p50_ms} | {total.door_p99_ms} ({worst_p99}) | {total.stored_p50_s} "
        f"| {total.stored_p99_s} ({worst_stored}) | {report.not_stored} | {queued} | {warm} → {last} ({growth_text}) "
        f"| {report.cpu_ms_per_webhook} | {_machine_cpu_percent(report)} |"
    )


def _auto_reply_line(turns: dict[str, Any]) -> str:
    local = ENVIRONMENTS["local"]
    ai = next(lane for lane in local.lanes if lane.name == "ai")
    return (
        f"**{AUTO_REPLY}**: the local tenant with auto-reply on ({LOCAL_SHOP}) gets bursts of {BURST_TEXTS} texts from "
        f"{BURST_CUSTOMERS} customers at a time; the model answers in {turns['model_ms']:g} ms; the ai lane runs at "
        f"its local concurrency ({ai.policy.max_concurrency}). {turns['bursts']} bursts, {turns['model_calls']} model "
        f"calls, {turns['replies']} replies accepted by the Graph endpoint (RepliesSent); the ai lane "
        + ("had answered everything" if turns["ai_drained"] else f"still held turns {AI_DRAIN_SECONDS:g} s")
        + " after the load."
    )


def _intervals(report: load.Report) -> list[str]:
    origin = report.intervals[0].start if report.intervals else 0.0
    lines = [
        f"**{report.shape}**, every 10 s:",
        "",
        "| t (s) | sent | 200 | 429 | door p50 ms | door p99 ms | stored p50 s | stored p99 s | queued | RSS MB "
        "| CPU % |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {i.end - origin:.0f} | {i.sent} | {i.statuses.get('200', 0)} | {i.statuses.get('429', 0)} | "
        f"{i.door_p50_ms} | {i.door_p99_ms} | {i.stored_p50_s} | {i.stored_p99_s} | "
        f"{sum(i.queue_depth.values()) if i.queue_depth else '-'} | {i.rss_mb} | {i.cpu_percent} |"
        for i in report.intervals
    ]
    return [*lines, "", f"![soak {report.shape}](report/soak-{report.shape}.png)", ""]


def markdown(
    reports: list[load.Report],
    steps: list[dict[str, Any]],
    stop: dict[str, Any],
    command: str,
    retention: int | None,
    turns: dict[str, Any] | None = None,
) -> str:
    first = reports[0]
    local = ENVIRONMENTS["local"].api.webhook
    onset = next((s["rate"] for s in steps if s["throttled"] > 0.01 * s["sent"]), None)
    bend = next((s["rate"] for s in steps if (s["door_p99_ms"] or 0) > DOOR_P99_GOAL_MS), None)
    lines = [
        BEGIN,
        "## Soak: the local runtime under sustained load",
        "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({os.cpu_count()} CPUs). For each traffic shape "
        "(ops/load/shapes.py), a fresh `lanectl local` in its own process; `lanectl load` from another sends "
        f"signed deliveries of about {first.size} B from {first.businesses} businesses over HTTP on 127.0.0.1, "
        f"{first.rate:g}/s for {first.seconds:g} s. The local webhook route's throttle is "
        f"{local.rate_limit:g}/s (burst {local.burst_limit}). "
        + (
            f"The runtime keeps every kind of data {retention} s (`lanectl local --retention {retention}`) and its "
            "emulated TTL deletes what expires, so memory measures what the runtime itself holds, not a growing "
            "table: in AWS the tables' items are DynamoDB's storage, not a process's memory."
            if retention is not None
            else "Data is kept as the environment says, so memory includes every item written."
        ),
        "",
        "Door and stored p99 are over the whole soak (worst 10 s interval in brackets); memory is the runtime's "
        f"RSS once {WARM_UP_FRACTION:.0%} of the soak had passed, at the end, and the growth between (%); CPU is "
        "the runtime's, per accepted webhook and as a share of the whole machine. Goal on a 2-core machine: door "
        f"p99 under {DOOR_P99_GOAL_MS} ms, stored p99 under 2 s, nothing left queued, memory growth under 10 %, "
        "CPU at most 50 % of the machine.",
        "",
        "| shape | sent | 200 | 429 | other | door p50 ms | door p99 ms | stored p50 s | stored p99 s | never stored "
        "| queued at end | RSS MB | CPU ms/webhook | CPU % of machine |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(_summary_row(r) for r in reports),
        "",
    ]
    if turns:
        lines += [_auto_reply_line(turns), ""]
    for report in reports:
        lines += _intervals(report)
    lines += [
        "**Ramp** (WhatsApp texts, each rate for a fixed time, one after the other): the stage answers 429"
        + (f" from {onset:g}/s offered" if onset is not None else " at no rate tried")
        + "; the door's p99 passes "
        + f"{DOOR_P99_GOAL_MS} ms"
        + (f" from {bend:g}/s." if bend is not None else " at no rate tried."),
        "",
        "| offered /s | sent | 200 | 429 | other | door p50 ms | door p99 ms | queued after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s['rate']:g} | {s['sent']} | {s['accepted']} | {s['throttled']} | {s['other']} | {s['door_p50_ms']} | "
        f"{s['door_p99_ms']} | {s['queued_after']} |"
        for s in steps
    ]
    lines += [
        "",
        f"**Stop under load** ({stop['offered_rate']:g}/s still arriving): Ctrl-C to exit "
        f"{stop['seconds_to_exit']} s, exit code {stop['exit_code']}, summary printed: {stop['summary_printed']}, "
        f"left in the temporary directory: {stop['temporary_leftovers'] or 'nothing'}.",
        END,
    ]
    return "\n".join(lines) + "\n"


def write_report(section: str, reports: list[Any], others: dict[str, Any]) -> None:
    """The soak's section, figures and plots under bench/report/, and the section into REPORT.md."""
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    everything = {"soak": [report.as_dict() for report in reports], **others}
    (REPORT_DIR / "soak.json").write_text(json.dumps(everything, indent=1), encoding="utf-8")
    for report in reports:
        load.plot(report, REPORT_DIR / f"soak-{report.shape}.png")
    (REPORT_DIR / "soak.md").write_text(section, encoding="utf-8")
    update_report(section)


def update_report(section: str, path: Path = REPORT) -> None:
    """Put the soak section into REPORT.md: in place of the last one, or before the findings."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section + "\n" + tail
    elif "## Findings" in text:
        head, tail = text.split("## Findings", 1)
        text = head + section + "\n## Findings" + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def _kill(runtime: Runtime) -> None:
    if runtime.process.poll() is None:
        os.killpg(runtime.process.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=load.rate_argument, default=50.0, help="webhooks a second offered (50)")
    parser.add_argument("--for", dest="seconds", type=load.duration_seconds, default=600.0, help="soak length (600)")
    parser.add_argument(
        "--shape",
        default=",".join(load.SHAPES),
        help="traffic shapes to soak, comma-separated, each in a fresh runtime (default: every one)",
    )
    parser.add_argument("--ramp", default="30,45,60,75,90,100", help="rates for the ramp, comma-separated")
    parser.add_argument("--step", type=load.duration_seconds, default=30.0, help="seconds per ramp rate (30)")
    parser.add_argument(
        "--retention",
        type=int,
        default=SOAK_RETENTION_SECONDS,
        help=f"seconds the runtime keeps data ({SOAK_RETENTION_SECONDS}); 0 keeps the environment's days",
    )
    parser.add_argument(
        "--model-latency",
        type=float,
        default=AUTO_REPLY_MODEL_MS,
        metavar="MS",
        help=f"the model's time to answer in the {AUTO_REPLY} shape ({AUTO_REPLY_MODEL_MS:g})",
    )
    parser.add_argument("--no-report", action="store_true", help="print only; leave bench/ as it is")
    args = parser.parse_args(argv)
    if not 0 <= args.model_latency <= 60_000:
        parser.error(f"--model-latency must be 0..60000 ms, got {args.model_latency:g}")
    rates = [load.rate_argument(r) for r in args.ramp.split(",") if r.strip()]
    shapes = [shape.strip() for shape in args.shape.split(",") if shape.strip()]
    unknown = [shape for shape in shapes if shape not in load.SHAPES]
    if unknown or not shapes:
        parser.error(f"--shape takes {', '.join(load.SHAPES)}; got {args.shape!r}")
    if not rates:
        parser.error("--ramp needs at least one rate: the report's ramp and its stop under load are measured at them")
    command = "make soak" if argv is None and len(sys.argv) == 1 else "python -m bench.soak " + " ".join(sys.argv[1:])
    retention = args.retention or None
    reports = []
    turns: dict[str, Any] = {}
    for shape in shapes:
        with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
            runtime = start(Path(scratch), retention, args.model_latency if shape == AUTO_REPLY else None)
            try:
                report, found = soak(runtime, args.rate, args.seconds, shape)
                reports.append(report)
                turns = found or turns
            finally:
                _kill(runtime)
    if turns:
        turns["model_ms"] = args.model_latency
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        runtime = start(Path(scratch), retention)
        try:
            steps = ramp(runtime, rates, args.step)
            stop = stop_under_load(runtime, max(rates))
        finally:
            _kill(runtime)
    section = markdown(reports, steps, stop, command, retention, turns)
    if not args.no_report:
        # bench/report/ is what `make scenarios` rebuilds REPORT.md from: a trial run leaves it alone.
        write_report(section, reports, {"auto_reply": turns, "ramp": steps, "stop": stop})
    print("\n" + section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
