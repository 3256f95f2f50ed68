"""Where the local runtime's CPU goes under load, by part: which function or thread spent it (the
door, the consumers, the mapping pollers, the API stage, the emulator's server for other
processes, the background threads) and on what (the emulator's AWS services, the SDK client,
IAM evaluation, metrics and alarms, logging, the code itself).

    python -m bench.cpu_by_part                           # WhatsApp texts, 50/s for 60 s
    python -m bench.cpu_by_part --shape statuses --for 90
    python -m bench.cpu_by_part --shape auto-reply --rate 20 --model-latency 100

`lanectl local` runs in its own process, as `make soak` runs it; py-spy samples it (only the thread
holding the interpreter's lock, so the shares are shares of CPU, not of waiting) while
`lanectl load` sends the shape at --rate for --for seconds. Prints the runtime's CPU time per
accepted webhook and each part's share. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

OWNERS = (
    ("door", ("handlers/ingress.py",)),
    # A task runs in a thread of its own (its time limit), so its stack does not name the handler.
    ("consumers", ("handlers/consumer.py", "domain/consumer/time_limit.py")),
    ("other functions", ("pipeline/handlers/",)),
    ("mapping pollers", ("local_aws/mappings.py", "local_aws/event_source.py")),
    ("API stage", ("local_aws/api.py",)),
    ("emulator's server (other processes)", ("werkzeug", "socketserver")),
    ("metrics and alarms", ("local_aws/alarms.py", "local_aws/metrics.py", "local_aws/queue_metrics.py")),
    ("TTL reaper", ("local_aws/ttl_reaper.py",)),
    ("background", ("local_aws/background.py", "local_aws/schedules.py")),
)
"""Who spent a sample: the first whose marker is anywhere in its stack."""

WHAT = (
    ("IAM evaluation", ("local_aws/iam",)),
    ("logging", ("logging/", "local_aws/capture.py", "aws_lambda_powertools/logging")),
    (
        "metrics and alarms",
        ("local_aws/metrics.py", "local_aws/alarms.py", "local_aws/log_filters.py", "powertools/metrics"),
    ),
    ("emulated AWS", ("/moto/", "local_aws/moto_", "local_aws/message_index", "local_aws/fair_groups", "aws_limits")),
    ("SDK client", ("botocore/", "boto3/")),
)
"""On what: the innermost frame that names one (a logging call inside an SDK call is logging)."""


def owner(frames: list[str]) -> str:
    stack = ";".join(frames)
    return next((name for name, marks in OWNERS if any(m in stack for m in marks)), "unattributed")


def what(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, marks in WHAT:
            if any(m in frame for m in marks):
                return name
    return "own code"


def shares(raw: Path) -> tuple[int, Counter[str], Counter[tuple[str, str]]]:
    """py-spy's raw (collapsed) stacks: samples, by owner, by (owner, what)."""
    total = 0
    owners: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        n = int(count)
        total += n
        owners[owner(frames)] += n
        pairs[(owner(frames), what(frames))] += n
    return total, owners, pairs


def main(argv: list[str] | None = None) -> int:
    from bench.soak import start
    from ops.load import command as load

    parser = argparse.ArgumentParser(prog="python -m bench.cpu_by_part", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=tuple(load.SHAPES), default="texts")
    parser.add_argument("--rate", type=load.rate_argument, default=50.0)
    parser.add_argument("--for", dest="seconds", type=load.duration_seconds, default=60.0)
    parser.add_argument("--retention", type=int, default=60, help="seconds the runtime keeps data (60; 0: days)")
    parser.add_argument(
        "--model-latency", type=float, default=None, metavar="MS", help="the local model's time a call (auto-reply)"
    )
    parser.add_argument("--samples", type=Path, default=None, help="also keep py-spy's raw stacks in this file")
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    with tempfile.TemporaryDirectory(prefix="cpu-") as scratch:
        runtime = start(Path(scratch), args.retention or None, args.model_latency)
        raw = Path(scratch) / "stacks.txt"
        try:
            secret, stack = load.connect("local", endpoint_url=runtime.aws_endpoint)
            sampler = subprocess.Popen(
                [spy, "record", "--pid", str(runtime.process.pid), "--rate", "50", "--gil", "--nonblocking",
                 "--format", "raw", "--output", str(raw)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            run = load.LoadRun(
                url=runtime.api_url, app_secret=secret, rate=args.rate, seconds=args.seconds, shape=args.shape
            )
            report = load.measure(run, stack=stack, pid=runtime.process.pid, interval_seconds=10, write=print)
            sampler.send_signal(signal.SIGINT)
            sampler.wait(timeout=60)
        finally:
            if runtime.process.poll() is None:
                os.killpg(runtime.process.pid, signal.SIGKILL)
        total, owners, pairs = shares(raw)
        if args.samples is not None:
            shutil.copyfile(raw, args.samples)
    cpu = report.cpu_ms_per_webhook
    print(f"\n{args.shape} at {args.rate:g}/s for {args.seconds:g} s: runtime CPU {cpu} ms a webhook")
    for name, n in owners.most_common():
        parts = ", ".join(f"{w} {c * 100 / total:.1f}" for (o, w), c in pairs.most_common() if o == name)
        print(f"{n * 100 / max(total, 1):5.1f}% {name}: {parts}")
    kinds: Counter[str] = Counter()
    for (_, w), c in pairs.items():
        kinds[w] += c
    print("on what: " + ", ".join(f"{w} {c * 100 / max(total, 1):.1f}%" for w, c in kinds.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
