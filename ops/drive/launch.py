"""`lanectl local` in a process of its own, returned once it says it is ready: how the end-to-end
tests and the soak start the runtime they drive from outside."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from local_aws.runtime import free_port

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 180


class LaunchFailed(RuntimeError):
    """The runtime exited or stayed silent before it was ready; the message carries its last lines."""


@dataclass
class Launched:
    process: subprocess.Popen[str]
    api_url: str
    aws_endpoint: str
    lines: list[str] = field(default_factory=list)
    """Everything it printed so far (kept up to date by a reader thread)."""


def launch(
    log_dir: Path,
    environ: dict[str, str] | None = None,
    *,
    own_session: bool = False,
    retention_seconds: int | None = None,
    webhook_throttle: str | None = None,
    model_latency_ms: float | None = None,
) -> Launched:
    api_port, aws_port = free_port(), free_port()
    process = subprocess.Popen(  # noqa: S603 (this interpreter, our own module)
        [
            sys.executable,
            "-m",
            "ops.commands.local",
            "--no-live",
            "--port",
            str(api_port),
            "--aws-port",
            str(aws_port),
            "--log-dir",
            str(log_dir),
            *([] if retention_seconds is None else ["--retention", str(retention_seconds)]),
            *([] if webhook_throttle is None else ["--webhook-throttle", webhook_throttle]),
            *([] if model_latency_ms is None else ["--model-latency", f"{model_latency_ms:g}"]),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(environ or {})},
        start_new_session=own_session,
    )
    launched = Launched(process, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{aws_port}")
    ready: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            launched.lines.append(line.rstrip("\n"))
            ready.put(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            line = ready.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            process.kill()
            raise LaunchFailed("the local runtime did not start:\n" + "\n".join(launched.lines[-40:])) from None
        if line.startswith("ready:"):
            return launched
        if process.poll() is not None:
            raise LaunchFailed("the local runtime exited:\n" + "\n".join(launched.lines[-40:]))
