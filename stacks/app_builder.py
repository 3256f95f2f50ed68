"""Builds the CDK app for one environment. `app.py` calls this with the name it read from the
context; tests and the local runtime call it directly.

Only `app.py` bundles assets (`bundle=True`: the CDK CLI then decides which stacks): bundling an
environment that ships bytecode needs its runtime's interpreter (stacks/constructs/bytecode.py),
and a template is the same without it."""

from __future__ import annotations

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from stacks.config.environments import Environment
from stacks.nag import acknowledge
from stacks.pipeline_stack import PipelineStack


def build_app(
    env: Environment, *, outdir: str | None = None, nag: bool = True, bundle: bool = False
) -> tuple[App, PipelineStack]:
    context: dict[str, object] | None = None if bundle else {"aws:cdk:bundling-stacks": []}
    app = App(outdir=outdir, context=context) if outdir else App(context=context)
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
