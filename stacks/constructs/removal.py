"""What CloudFormation does with a resource that keeps data (a table, a queue, a secret, a key, a
log group) when it leaves the stack."""

from __future__ import annotations

from aws_cdk import RemovalPolicy

from stacks.config.environments import Environment


def keeps_data(env: Environment) -> RemovalPolicy:
    """Where the environment keeps its data, kept when the stack is deleted or the resource
    replaced (DeletionPolicy RetainExceptOnCreate, UpdateReplacePolicy Retain), but deleted when
    the create that made it rolls back: it holds nothing yet, and a kept lane queue (named
    `lanes-<env>-<lane>`) would make the retry fail on its name. Elsewhere, deleted."""
    return RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE if env.retain_stateful else RemovalPolicy.DESTROY
