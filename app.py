#!/usr/bin/env python3
"""The CDK app. The only place that reads context or the process environment: it picks the
environment (`-c env=<name>`) and builds its stack."""

from __future__ import annotations

import sys

from aws_cdk import App

from stacks.app_builder import build_app
from stacks.config.environments import UnknownEnvironment, get_environment


def main() -> None:
    name = App().node.try_get_context("env")
    try:
        env = get_environment(name)
    except UnknownEnvironment as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
    app, _ = build_app(env, bundle=True)
    app.synth()


if __name__ == "__main__":
    main()
