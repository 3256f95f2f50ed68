"""One way to make a pipeline function: arm64, the latest Python runtime, the code asset built
from `lambdas/` without Docker (with bytecode for the runtime where the environment ships it:
stacks/constructs/bytecode.py), Powertools from its managed layer, and its own log group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import CfnResource, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IValidation

from pipeline.metric_filters import LineMetric
from stacks.config.environments import Environment
from stacks.config.lambda_runtime import ARCHITECTURE as ARCHITECTURE_NAME
from stacks.config.lambda_runtime import PYTHON_RUNTIME, powertools_parameter
from stacks.constructs.bytecode import code_asset
from stacks.constructs.grants import keep_unexercised
from stacks.constructs.removal import keeps_data
from stacks.environment_size import LAMBDA_ENVIRONMENT_BYTES, StandIns, measured
from stacks.runtime_env import stack_name

LAMBDA_SOURCE = Path(__file__).resolve().parents[2] / "lambdas"
RUNTIME = next(runtime for runtime in lambda_.Runtime.ALL if runtime.name == PYTHON_RUNTIME)
ARCHITECTURE = {a.name: a for a in (lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64)}[ARCHITECTURE_NAME]
_ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/.mypy_cache", "**/.pytest_cache"]

_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    7: logs.RetentionDays.ONE_WEEK,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def retention(days: int) -> logs.RetentionDays:
    try:
        return _RETENTION[days]
    except KeyError:
        raise ValueError(f"log retention of {days} days is not one of {sorted(_RETENTION)}") from None


def log_group(scope: Construct, construct_id: str, env: Environment) -> logs.LogGroup:
    """A log group kept as long as the environment keeps logs, and kept after the stack where
    the environment keeps its data."""
    return logs.LogGroup(
        scope,
        construct_id,
        retention=retention(env.log_retention_days),
        removal_policy=keeps_data(env),
    )


@dataclass(frozen=True)
class FunctionSpec:
    handler: str
    environment: Mapping[str, str]
    timeout_seconds: int
    memory_mb: int
    description: str
    reserved_concurrency: int | None = None


class SharedCode(Construct):
    """The code asset and the Powertools layer, made once per stack and shared by every function.

    The layer's ARN comes from the public SSM parameter Powertools publishes per version,
    architecture and runtime; CloudFormation resolves it at deploy time, so synthesis needs
    neither network nor credentials, and the version is pinned in config.
    """

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.code = code_asset(LAMBDA_SOURCE, PYTHON_RUNTIME, env.code_start, _ASSET_EXCLUDES)
        layer_arn = ssm.StringParameter.value_for_string_parameter(self, powertools_parameter(env.powertools_version))
        self.powertools = lambda_.LayerVersion.from_layer_version_arn(self, "Powertools", layer_arn)
        self.env = env


class PipelineFunction(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, shared: SharedCode, spec: FunctionSpec) -> None:
        super().__init__(scope, construct_id)
        env = shared.env
        self.env = env
        self.log_group = log_group(self, "Logs", env)
        # A role of its own with no managed policy: it may write to its own log group and nothing
        # else until a construct grants exactly what the function calls.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=spec.description[:1000],
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=spec.handler,
            code=shared.code,
            layers=[shared.powertools],
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            environment=dict(spec.environment),
            reserved_concurrent_executions=spec.reserved_concurrency,
            log_group=self.log_group,
            role=self.role,
            logging_format=lambda_.LoggingFormat.JSON,
            # Not PASS_THROUGH where tracing is off: CDK grants X-Ray for it too, and nothing upstream
            # of these functions (an HTTP API, SQS from untraced senders) ever passes a sampled trace.
            tracing=lambda_.Tracing.ACTIVE if env.tracing_active else None,
        )
        if env.tracing_active:
            keep_unexercised(
                self.role,
                ("xray:PutTraceSegments", "xray:PutTelemetryRecords"),
                "Lambda sends the function's trace segments to X-Ray with its role; the local runtime records none",
            )

        self.node.add_validation(_EnvironmentFits(self, spec.environment))

    def count_lines(self, metrics: Sequence[LineMetric], namespace: str) -> list[logs.MetricFilter]:
        """Metric filters on this function's log group: each counts the lines its pattern matches
        (pipeline/metric_filters.py says why these counts are not written as lines of their own)."""
        return [
            logs.MetricFilter(
                self,
                f"Counts{metric.metric}",
                log_group=self.log_group,
                filter_pattern=logs.FilterPattern.literal(metric.pattern),
                metric_namespace=namespace,
                metric_name=metric.metric,
                metric_value="1",
                dimensions=dict(metric.dimensions),
                unit=cloudwatch.Unit.COUNT,
            )
            for metric in metrics
        ]


_NAME_PROPERTIES = {
    "AWS::SQS::Queue": ("queue_name", "QueueName"),
    "AWS::SecretsManager::Secret": ("name", "Name"),
    "AWS::DynamoDB::Table": ("table_name", "TableName"),
}
"""The name a resource may be given in the template, which its references then resolve to."""


@jsii.implements(IValidation)
class _EnvironmentFits:
    """Fails synthesis when the function's variables, resolved as long as they can be once
    deployed, pass Lambda's 4 KB (stacks/environment_size.py): the deploy would fail on it."""

    def __init__(self, function: PipelineFunction, variables: Mapping[str, str]) -> None:
        self._function = function
        self._variables = dict(variables)

    def validate(self) -> list[str]:
        stack = Stack.of(self._function)
        resources: dict[str, tuple[str, dict[str, str]]] = {}
        for node in stack.node.find_all():
            if isinstance(node, CfnResource):
                kind = node.cfn_resource_type
                attribute, key = _NAME_PROPERTIES.get(kind, ("", ""))
                given = stack.resolve(getattr(node, attribute, None)) if attribute else None
                resources[stack.resolve(node.logical_id)] = (kind, {key: given} if isinstance(given, str) else {})
        env = self._function.env
        stand_ins = StandIns(stack_name(env), resources.get, env.region)
        variables = {name: stack.resolve(value) for name, value in self._variables.items()}
        size = measured(variables, stand_ins)
        if size <= LAMBDA_ENVIRONMENT_BYTES:
            return []
        each = {name: len(stand_ins.resolved(value)) for name, value in variables.items()}
        largest = ", ".join(f"{name} {each[name]}" for name in sorted(each, key=lambda n: -each[n])[:3])
        return [
            f"function {self._function.node.path}: its environment measures {size} bytes as Lambda counts it, "
            f"over Lambda's {LAMBDA_ENVIRONMENT_BYTES}, so the deploy would fail (largest variables: {largest})"
        ]
