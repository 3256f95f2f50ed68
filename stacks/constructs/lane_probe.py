"""The lane probe: its own function and schedule, never on a lane it watches, resuming a lane that
paused itself once the dependency that stopped it answers (pipeline/handlers/lane_probe.py).

Its role may read and update exactly the mappings of the lanes that can pause themselves, read and
delete items of the state table (the pause marks), read Meta's access token, and invoke exactly the
watched lanes' models: the calls its probe and its ramp make, nothing else. An alarm per watched lane
pages when the probe has found that lane's dependency failing through
`LaneProbeConfig.failing_alarm_seconds` (`failing_datapoints` of its periods: a late run may leave one
in five without a report).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from pipeline import metric_names
from stacks.config.environments import Environment
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.consumer_grants import grant_model
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode
from stacks.constructs.grants import grant_rows, grant_secret
from stacks.constructs.lane import LaneConsumer
from stacks.constructs.schedules import schedule_rule
from stacks.constructs.tables import PipelineTables
from stacks.runtime_env import SENDING_TASKS, lane_id, metrics_namespace, probed_lanes

TIMEOUT_SECONDS = 30
"""A run is a read, and per paused lane a mapping read, a check of at most 10 s and an update."""


def probe_alarm_period(env: Environment) -> int:
    """Never shorter than a probe run (a healthy lane's probe reports nothing, a failing one once a
    run), nor than the environment's alarm period; one CloudWatch accepts (10 or 30 s, or minutes)."""
    wanted = max(env.probe.period_seconds, env.alarms.period_seconds)
    for short in (10, 30):
        if wanted <= short:
            return short
    return math.ceil(wanted / 60) * 60


def failing_datapoints(periods: int) -> int:
    """Of `periods` alarm periods, how many with a failed probe page. EventBridge may deliver a
    run late, leaving one period without a report and the next with two; a period without one is
    not a success either (missing data is not breaching), so one in five may be empty."""
    return periods - periods // 5


class LaneProbe(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        shared: SharedCode,
        tables: PipelineTables,
        consumers: Mapping[str, LaneConsumer],
        access_token: secretsmanager.ISecret,
        environment: dict[str, str],
        on_call: OnCall,
    ) -> None:
        super().__init__(scope, construct_id)
        self.probe = PipelineFunction(
            self,
            "Probe",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.lane_probe.handler",
                environment=environment,
                timeout_seconds=TIMEOUT_SECONDS,
                memory_mb=256,
                description="Resumes a lane that paused itself, on the paced ramp, once its dependency answers",
                # One run at a time: two would both step the same ramp.
                reserved_concurrency=1 if env.reserved_concurrency else None,
            ),
        )
        function = self.probe.function
        lanes = probed_lanes(env)
        stack = Stack.of(self)
        # The pause marks: read every watched lane's, delete one when its ramp ends.
        grant_rows(function, tables.state, ("dynamodb:BatchGetItem", "dynamodb:DeleteItem"))
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"],
                resources=[
                    stack.format_arn(
                        service="lambda",
                        resource="event-source-mapping",
                        resource_name=consumers[lane.name].mapping.event_source_mapping_id,
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                    for lane in lanes
                ],
            )
        )
        if any(lane.policy.task in SENDING_TASKS for lane in lanes):
            grant_secret(function, access_token)  # GET /me with the token, after a 190
        for lane in lanes:
            model = env.model(lane.name)
            if model is not None:
                grant_model(function, model)  # one Converse call of maxTokens 1
        self.rule = schedule_rule(
            self, "Schedule", env.probe.period_seconds, f"lanes-{env.name}: resume lanes that paused themselves"
        )
        # A missed run is made up by the next one; retrying an old run only overlaps it.
        self.rule.add_target(targets.LambdaFunction(function, retry_attempts=0))
        period = probe_alarm_period(env)
        periods = max(1, math.ceil(env.probe.failing_alarm_seconds / period))
        self.failing_alarms = {
            lane.name: on_call.alarm(
                self,
                f"{lane_id(lane.name)}ProbeFailing",
                notice=Notice.CONDITION,
                metric=cloudwatch.Metric(
                    namespace=metrics_namespace(env),
                    metric_name=metric_names.PROBE_FAILED,
                    dimensions_map={metric_names.LANE: lane.name, "service": "lane-probe"},
                    period=Duration.seconds(period),
                    statistic="Sum",
                ),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=periods,
                datapoints_to_alarm=failing_datapoints(periods),
                description=f"{lane.name}: the lane paused itself and its dependency has failed the probe in "
                f"{failing_datapoints(periods)} of the last {periods} periods of {period} s; it stays paused, its "
                "records wait in its queue. See docs/RUNBOOK.md#lane-probe-failing.",
            )
            for lane in lanes
        }
        # A probe that cannot run (its marks unreadable, its code broken) resumes nothing and
        # reports no failing dependency either: its own errors page, over the same span.
        self.errors_alarm = on_call.alarm(
            self,
            "ProbeErrors",
            notice=Notice.CONDITION,
            metric=function.metric_errors(period=Duration.seconds(period), statistic="Sum"),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=periods,
            datapoints_to_alarm=failing_datapoints(periods),
            description=f"The lane probe has failed in {failing_datapoints(periods)} of the last {periods} periods of "
            f"{period} s: a lane that paused itself is not being resumed. See docs/RUNBOOK.md#lane-probe-failing.",
        )
