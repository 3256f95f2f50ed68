"""Synthesize an environment exactly as `cdk synth -c env=<name>` would.

Synthesis runs in a child process, as the CDK CLI runs the app: the runtime's own process never
holds the jsii kernel (a Node.js child that takes ~0.5 GB and, sharing the terminal's process
group, dies first on Ctrl-C and then complains at exit).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.config.environments import Environment
from stacks.runtime_env import stack_name


@dataclass(frozen=True)
class SynthesizedApp:
    env: Environment
    stack_name: str
    template: dict[str, Any]
    assets: dict[str, Any]
    outdir: Path


class SynthesisFailed(RuntimeError):
    pass


def synthesize(env: Environment, outdir: Path | None = None) -> SynthesizedApp:
    """The same code path as `app.py` (an Environment may be a modified copy, for scenarios),
    without the nag packs: they gate `cdk synth` and the tests, and change no resource."""
    target = outdir or Path(tempfile.mkdtemp(prefix=f"lanes-{env.name}-"))
    environ = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    result = subprocess.run(  # noqa: S603 (this interpreter, this module)
        [sys.executable, "-m", "local_aws.synth", str(target)],
        input=pickle.dumps(env),
        capture_output=True,
        env=environ,
        timeout=600,
        check=False,
    )
    if result.returncode != 0:
        if outdir is None:
            shutil.rmtree(target, ignore_errors=True)
        raise SynthesisFailed(f"synthesis of {env.name} failed:\n{result.stderr.decode(errors='replace')[-4000:]}")
    name = stack_name(env)
    return SynthesizedApp(
        env=env,
        stack_name=name,
        template=json.loads((target / f"{name}.template.json").read_text()),
        assets=json.loads((target / f"{name}.assets.json").read_text()),
        outdir=target,
    )


def _child(outdir: str) -> None:
    from stacks.app_builder import build_app

    env = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 (from our own parent process)
    app, _ = build_app(env, outdir=outdir, nag=False)
    app.synth()


if __name__ == "__main__":
    _child(sys.argv[1])
