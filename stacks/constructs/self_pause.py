"""A lane that pauses itself: its consumer may disable its own mapping, and an alarm per cause.

Only lanes whose dependency can refuse every record (a model the lane may not use, Meta's token
revoked) get it. The consumer finds its mapping by its own function name (adapters/lane_switch.py),
which needs ListEventSourceMappings (no resource-level permission exists for it), and may update
this one mapping only. The grant is a policy of its own: the function's default policy is made
before the function, and the mapping after, so the mapping's ARN in it would loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam

from pipeline import metric_names
from pipeline.domain.dependencies.lane_pause import META_FAILING, MODEL_FAILING, MODEL_REFUSED, TOKEN_INVALID
from stacks.config.environments import Environment
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.lane import LaneConsumer
from stacks.runtime_env import metrics_namespace

CAUSES = {
    MODEL_REFUSED: "the lane may not call its model (access denied, the model not enabled in the account, or no "
    "such model or profile in the region)",
    TOKEN_INVALID: "Meta refused the access token (error 190): it was revoked, expired or replaced",
    MODEL_FAILING: "most of its model calls failed for a while (Bedrock unavailable or timing out)",
    META_FAILING: "most of its sends through Meta failed for a while (Meta answering 5xx, or unreachable)",
}
"""The stop-the-lane reasons (ModelRefused in domain/dependencies/model.py, TokenInvalid in
domain/dependencies/meta_send.py)."""


def pause_on_refusal(consumer: LaneConsumer, env: Environment, reasons: Iterable[str], on_call: OnCall) -> None:
    reasons = sorted(reasons)
    if not reasons:
        return
    lane = consumer.lane.name
    function = consumer.consumer.function
    role = function.role
    assert role is not None
    mapping_arn = Stack.of(consumer).format_arn(
        service="lambda",
        resource="event-source-mapping",
        resource_name=consumer.mapping.event_source_mapping_id,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
    consumer.pause_policy = iam.Policy(
        consumer,
        "PausesItself",
        roles=[role],
        statements=[
            iam.PolicyStatement(actions=["lambda:ListEventSourceMappings"], resources=["*"]),
            iam.PolicyStatement(actions=["lambda:UpdateEventSourceMapping"], resources=[mapping_arn]),
        ],
    )
    period = on_call.period()
    for reason in reasons:
        consumer.paused_alarms[reason] = on_call.alarm(
            consumer,
            f"Paused{''.join(part.title() for part in reason.split('_'))}",
            notice=Notice.EVENT,
            metric=cloudwatch.Metric(
                namespace=metrics_namespace(env),
                metric_name=metric_names.LANE_PAUSED,
                dimensions_map={
                    metric_names.LANE: lane,
                    metric_names.REASON: reason,
                    "service": f"consumer-{lane}",
                },
                period=period,
                statistic="Sum",
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            description=f"{lane}: the lane paused itself ({reason}): {CAUSES[reason]}. Its records wait in its "
            "queue, none dead-lettered; the lane probe resumes it on its ramp once the dependency answers. "
            "See docs/RUNBOOK.md#lane-paused-itself.",
        )
