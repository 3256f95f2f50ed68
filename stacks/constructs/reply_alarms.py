"""The alarm on replies Meta took and then reported failed: the statuses that say so reach the
lanes that apply WhatsApp's statuses (tasks/messages.py), which count them in RepliesFailed, by
Code and by Lane alone (the series read here). A rate, in failed replies a period; a share of the
replies sent would need metric math, which the local runtime does not evaluate (local_aws/alarms.py)."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from pipeline import metric_names
from stacks.config.environments import Environment
from stacks.config.lanes import Lane
from stacks.constructs.alarms import Notice, OnCall
from stacks.runtime_env import STATUS_TASKS, metrics_namespace


def failed_replies_alarm(scope: Construct, env: Environment, lane: Lane, on_call: OnCall) -> cloudwatch.Alarm | None:
    """On a lane that applies statuses: at least AlarmConfig.replies_failed_per_period replies
    reported failed in each of the evaluation periods. None on any other lane."""
    if lane.policy.task not in STATUS_TASKS:
        return None
    threshold = env.alarms.replies_failed_per_period
    return on_call.alarm(
        scope,
        "FailedReplies",
        metric=cloudwatch.Metric(
            namespace=metrics_namespace(env),
            metric_name=metric_names.REPLIES_FAILED,
            # Powertools adds the `service` dimension to every metric it emits; alarms must match it.
            dimensions_map={metric_names.LANE: lane.name, "service": f"consumer-{lane.name}"},
            period=on_call.period(),
            statistic="Sum",
        ),
        threshold=threshold,
        notice=Notice.CONDITION,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        description=f"{lane.name}: {threshold} or more replies a period that Meta took were then reported failed "
        "(RepliesFailed by Code says which of Meta's codes: 131047 outside the service window, 131026 "
        "undeliverable, ...). See docs/RUNBOOK.md#failed-replies.",
    )
