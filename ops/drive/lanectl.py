"""`lanectl` in a process of its own against a running pipeline's emulator, as an operator runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ops.aws import ENDPOINT_VARIABLE, LOCAL_REGION

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_SECONDS = 300


def lanectl(endpoint: str, *args: str, timeout: float = TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """Run `lanectl ARGS` with the emulator at `endpoint` and its stand-in credentials; never raises
    on a non-zero exit (the caller judges the result)."""
    environ = {
        **os.environ,
        ENDPOINT_VARIABLE: endpoint,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": LOCAL_REGION,
    }
    return subprocess.run(  # noqa: S603 (this interpreter, our own CLI)
        [sys.executable, "-m", "ops.cli", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
