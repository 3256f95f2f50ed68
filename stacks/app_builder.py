"""Builds the CDK app for one environment. `app.py` calls this with the name it read from the
context; tests and the local runtime call it directly."""

from __future__ import annotations

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from stacks.config.environments import Environment
from stacks.nag import acknowledge
from stacks.pipeline_stack import PipelineStack


def build_app(env: Environment, *, outdir: str | None = None, nag: bool = True) -> tuple[App, PipelineStack]:
    app = App(outdir=outdir) if outdir else App()
    stack = PipelineStack(app, env=env)
    if nag:
        # Acknowledgements are copied into each resource's template metadata, so the template itself
        # carries the audit trail of what was accepted and why.
        Validations.of(app).add_plugins(
            AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True),
            ServerlessChecks(app, write_suppressions_to_cloud_formation=True),
        )
        acknowledge(stack)
    return app, stack
