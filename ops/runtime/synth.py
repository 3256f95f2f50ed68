"""Synthesize the `local` environment exactly as `cdk synth -c env=local` would."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.config.environments import Environment


@dataclass(frozen=True)
class SynthesizedApp:
    env: Environment
    stack_name: str
    template: dict[str, Any]
    assets: dict[str, Any]
    outdir: Path


def synthesize(env: Environment, outdir: Path | None = None) -> SynthesizedApp:
    """The same code path as `app.py`, without the nag packs (they gate `cdk synth` and the
    tests; they change no resource)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from stacks.app_builder import build_app
    from stacks.pipeline_stack import stack_name

    target = outdir or Path(tempfile.mkdtemp(prefix=f"lanes-{env.name}-"))
    app, _ = build_app(env, outdir=str(target), nag=False)
    app.synth()
    name = stack_name(env)
    return SynthesizedApp(
        env=env,
        stack_name=name,
        template=json.loads((target / f"{name}.template.json").read_text()),
        assets=json.loads((target / f"{name}.assets.json").read_text()),
        outdir=target,
    )
