"""`lanectl local`: run the whole pipeline on this machine until Ctrl-C.

The API listens on 127.0.0.1 (--port); the emulated AWS backend is reachable for other processes
on --aws-port, so `lanectl --env local dlq list` and friends work against it.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

DEFAULT_API_PORT = 8787
DEFAULT_AWS_PORT = 5599
REFRESH_SECONDS = 1.0
PLAIN_EVERY_SECONDS = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=DEFAULT_API_PORT, help="API port on 127.0.0.1 (default 8787)")
    parser.add_argument(
        "--aws-port", type=int, default=DEFAULT_AWS_PORT, help="moto server port for other processes (default 5599)"
    )
    parser.add_argument("--log-dir", type=Path, default=Path(".local/logs"), help="function logs (default .local/logs)")
    parser.add_argument("--no-live", action="store_true", help="print events as lines instead of a live view")
    parser.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    parser.add_argument(
        "--retention",
        type=int,
        default=None,
        metavar="SECONDS",
        help="keep every kind of data this many seconds instead of the environment's days, so a long "
        "run's memory is bounded by the window (a delivery still queued longer than this loses its row)",
    )
    parser.add_argument(
        "--webhook-throttle",
        type=throttle,
        default=None,
        metavar="RATE/BURST",
        help="the webhook route's throttle for this run instead of the stage's (60/200): a lower one "
        "shows the door's 429 on a machine too busy to answer faster than the stage's rate",
    )
    parser.add_argument(
        "--model-latency",
        type=model_latency,
        default=None,
        metavar="MS",
        help="the local model answers each call after this many milliseconds (default 0), as Bedrock "
        "takes its time: a soak with auto-reply on states the model's time it was measured with",
    )


def throttle(text: str) -> tuple[float, int]:
    """RATE/BURST, as API Gateway's ThrottlingRateLimit and ThrottlingBurstLimit."""
    rate, _, burst = text.partition("/")
    try:
        parsed = float(rate), int(burst)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RATE/BURST such as 10/20, got {text!r}") from None
    if parsed[0] <= 0 or parsed[1] < 1:
        raise argparse.ArgumentTypeError(f"the rate must be above 0 and the burst at least 1, got {text!r}")
    return parsed


def model_latency(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds such as 1000, got {text!r}") from None
    if not 0 <= value <= 60_000:
        raise argparse.ArgumentTypeError(f"the model's latency must be 0 to 60000 ms, got {text!r}")
    return value


def main(args: argparse.Namespace) -> int:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from local_aws.iam import ledger
    from local_aws.runtime import LocalRuntime
    from ops.console.console import render, summary
    from ops.console.live_view import LiveView

    live = sys.stdout.isatty() and not getattr(args, "no_live", False)
    out = sys.stdout

    def print_event(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    runtime = LocalRuntime(
        api_port=args.port,
        aws_port=args.aws_port,
        log_dir=args.log_dir,
        on_event=None if live else print_event,
        retention_seconds=getattr(args, "retention", None),
        webhook_throttle=getattr(args, "webhook_throttle", None),
    )
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        if stop.is_set():  # asked twice: leave now, as a second Ctrl-C means
            os._exit(130)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    out.write("synthesizing the local environment and deploying it into the emulator...\n")
    out.flush()
    try:
        runtime.start()
    except OSError as exc:
        out.write(f"error: cannot start the local runtime: {exc} (is another one running on these ports?)\n")
        return 1
    if getattr(args, "model_latency", None) is not None:
        runtime.model.configure(latency_ms=args.model_latency)
    out.write(f"ready: API {runtime.api_url}  AWS endpoint {runtime.aws_endpoint}  (Ctrl-C stops)\n")
    out.flush()
    waited = 0.0
    view = LiveView(out) if live else None
    try:
        while not stop.wait(REFRESH_SECONDS):
            waited += REFRESH_SECONDS
            if view is not None:
                view.update(runtime)
            elif waited % PLAIN_EVERY_SECONDS < REFRESH_SECONDS:
                out.write(render(runtime).split("\nalarms firing")[0] + "\n")
                out.flush()
            if args.duration is not None and waited >= args.duration:
                break
    finally:
        if view is not None:
            view.stop()
        # Stop taking work first, so the summary is quick and final; the backend it reads goes last.
        runtime.quiesce()
        out.write(summary(runtime) + "\n")
        out.flush()
    # Everything the runtime held is in this process and is gone with it; batches abandoned at the
    # stop still compete for the interpreter, and an orderly teardown under load took seconds more
    # than the 5 s a stop is allowed. Logs are written line by line, synthesis output was removed
    # at deploy, so leaving now loses nothing.
    sys.stderr.flush()
    ledger.flush()
    os._exit(0)


if __name__ == "__main__":
    from local_aws.iam import ledger as _ledger

    # Started by the tests' launcher, not lanectl: the entry point reads what lanectl's would.
    if os.environ.get(_ledger.DIRECTORY_VARIABLE):
        _ledger.keep_in(os.environ[_ledger.DIRECTORY_VARIABLE])
    _parser = argparse.ArgumentParser(prog="python -m ops.commands.local", description=__doc__)
    add_arguments(_parser)
    raise SystemExit(main(_parser.parse_args()))
