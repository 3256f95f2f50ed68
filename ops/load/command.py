"""`lanectl load`: signed Meta webhooks at a set rate against a running pipeline, with figures.

    lanectl load --rate 50 --for 10m                 # against `lanectl local` (127.0.0.1:8787)
    lanectl load --rate 50 --for 60s --output json > out.json    # every figure, for scripts
    lanectl load --rate 50 --for 60s --json out.json --plot out.png

Open loop, as Meta sends: a delivery leaves at its scheduled time whether or not earlier ones were
answered (up to --connections at once; one that finds none free is counted as late). Each is a
delivery of --shape (ops/load/shapes.py: WhatsApp texts from many customers by default; one
customer to many businesses, a long history, new customers, statuses, the three products) of
about --size bytes from one of --businesses, signed with the stack's app secret.
Every --interval it prints answers by status, the door's p50/p99, sent-to-stored p50/p99 (the
message item's `stored_at` read back from the data table, against the moment it was sent), the
lanes' queue depth and the runtime's memory (--pid, or the process serving --url on this machine).

Traffic goes only to loopback addresses, and stops by itself: the count is rate times duration.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ops.load.figures import Interval, Report, percentile, plot, summarise, total_line
from ops.load.process_stats import serving_pid
from ops.load.shapes import SHAPES, Delivery, deliveries
from ops.load.traffic import LoadError, LoadRun, Sent, loopback_only
from ops.load.watch import StackView, measure
from ops.output import JSON, OUTPUTS, TEXT

__all__ = [
    "SHAPES",
    "Delivery",
    "Interval",
    "LoadError",
    "LoadRun",
    "Report",
    "Sent",
    "StackView",
    "deliveries",
    "loopback_only",
    "measure",
    "percentile",
    "plot",
    "summarise",
]

DEFAULT_URL = "http://127.0.0.1:8787"
MAX_RATE = 2000
MAX_SECONDS = 3600


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=rate_argument, default=50.0, help="webhooks a second (default 50)")
    parser.add_argument(
        "--for", dest="seconds", type=duration_seconds, default=60.0, help="how long: 90s, 10m (default 60s)"
    )
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the API, on this machine (default {DEFAULT_URL})")
    parser.add_argument(
        "--shape",
        choices=tuple(SHAPES),
        default="texts",
        help="who writes to whom, on which product (ops/load/shapes.py; default texts)",
    )
    parser.add_argument("--businesses", type=int, default=30, help="WhatsApp accounts the texts come from (30)")
    parser.add_argument("--size", type=int, default=1500, help="bytes per delivery (default 1500)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds per figures line (default 10)")
    parser.add_argument("--connections", type=int, default=64, help="deliveries in flight at most (default 64)")
    parser.add_argument("--pid", type=int, help="process whose memory to report (default: the one serving --url)")
    parser.add_argument(
        "--output",
        choices=OUTPUTS,
        default=TEXT,
        help="json: every figure as one document on stdout (the running lines go to stderr)",
    )
    parser.add_argument("--json", type=Path, help="also write that document to this file")
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

    # With --output json, stdout carries the document alone; the running figures go to stderr.
    as_json = getattr(args, "output", TEXT) == JSON
    lines = sys.stderr if as_json else sys.stdout

    def write(text: str) -> None:
        lines.write(text + "\n")
        lines.flush()

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
            shape=getattr(args, "shape", "texts"),
        )
    except LoadError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    pid = args.pid or serving_pid(port)
    write(
        f"{run.count} signed deliveries ({run.shape}) of {args.size} B from {args.businesses} businesses to "
        f"http://{host}:{port}/webhooks/meta at {args.rate:g}/s for {args.seconds:g} s"
        + (f"; memory of pid {pid}" if pid else "")
    )
    try:
        report = measure(run, stack=stack, pid=pid, interval_seconds=args.interval, write=write)
    except KeyboardInterrupt:
        run.stop()
        sys.stderr.write("interrupted\n")
        return 130
    write(total_line(report))
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=1) + "\n")
        sys.stdout.flush()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=1))
    if args.plot and report.intervals:
        plot(report, args.plot)
    return 0
