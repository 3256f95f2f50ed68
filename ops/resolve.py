"""The deployed resources of an environment, read from its CloudFormation stack's outputs.

The stack (`lanes-<env>`) publishes, per lane, `<Lane>QueueUrl`, `<Lane>QueueArn`, `<Lane>DlqUrl`,
`<Lane>DlqArn`, `<Lane>MappingId` and `<Lane>FunctionName` (`<Lane>` = the lane name capitalised),
and globally `ApiUrl`, the table names, `AlarmTopicArn`, `MetaSecretArn` and `SenderKeyArn`. Physical names are
never guessed: what the stack says is what exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ops.errors import AWS, USAGE, OpsError
from stacks.config.environments import Environment
from stacks.config.lanes import Lane
from stacks.runtime_env import lane_id

LANE_OUTPUTS = ("QueueUrl", "QueueArn", "DlqUrl", "DlqArn", "MappingId", "FunctionName")
GLOBAL_OUTPUTS = (
    "ApiUrl",
    "WebhookTableName",
    "JobsTableName",
    "StateTableName",
    "DataTableName",
    "AlarmTopicArn",
    "MetaSecretArn",
    "SenderKeyArn",
)
_UNUSABLE = ("ROLLBACK_COMPLETE", "DELETE_COMPLETE", "DELETE_IN_PROGRESS", "CREATE_FAILED", "CREATE_IN_PROGRESS")


def stack_name(env: Environment) -> str:
    return f"lanes-{env.name}"


def output_prefix(lane_name: str) -> str:
    """`messages` → `Messages`, `bulk_imports` → `BulkImports`: the stack's own spelling of a lane's
    output keys, so a lane named with `_` or `-` is found too."""
    return lane_id(lane_name)


def known_lane(env: Environment, name: str) -> Lane:
    """The catalogue's lane, checked before any AWS call so a typo costs nothing."""
    if name not in env.lane_names:
        raise OpsError(f"unknown lane {name!r} in {env.name}; lanes: {', '.join(env.lane_names)}", USAGE)
    return env.lane(name)


@dataclass(frozen=True)
class LaneResources:
    name: str
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    mapping_id: str
    function_name: str

    @property
    def dlq_name(self) -> str:
        return self.dlq_url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Deployment:
    stack: str
    status: str
    outputs: Mapping[str, str]

    def output(self, key: str) -> str:
        value = self.outputs.get(key)
        if not value:
            raise OpsError(
                f"stack {self.stack} has no output {key}: it was deployed from another version of this "
                "project; redeploy it",
                AWS,
            )
        return value

    def lane(self, name: str) -> LaneResources:
        prefix = output_prefix(name)
        values = {key: self.output(prefix + key) for key in LANE_OUTPUTS}
        return LaneResources(
            name=name,
            queue_url=values["QueueUrl"],
            queue_arn=values["QueueArn"],
            dlq_url=values["DlqUrl"],
            dlq_arn=values["DlqArn"],
            mapping_id=values["MappingId"],
            function_name=values["FunctionName"],
        )


def _describe(cloudformation: Any, name: str) -> dict[str, Any] | None:
    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") == "ValidationError" and "does not exist" in str(error.get("Message", "")):
            return None
        raise
    return stacks[0] if stacks else None


def find(cloudformation: Any, env: Environment) -> Deployment | None:
    """The environment's stack, or None when it has not been deployed."""
    stack = _describe(cloudformation, stack_name(env))
    if stack is None:
        return None
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])}
    return Deployment(stack=stack["StackName"], status=stack.get("StackStatus", ""), outputs=outputs)


def resolve(cloudformation: Any, env: Environment, where: str) -> Deployment:
    deployment = find(cloudformation, env)
    if deployment is None:
        hint = "start it with `lanectl local`" if env.name == "local" else f"deploy with `make deploy ENV={env.name}`"
        raise OpsError(f"stack {stack_name(env)} does not exist in {where}; {hint}", AWS)
    if deployment.status in _UNUSABLE:
        raise OpsError(f"stack {deployment.stack} is {deployment.status}; its outputs cannot be trusted", AWS)
    return deployment
