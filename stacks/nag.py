"""cdk-nag acknowledgements, each with the reason it is right for this pipeline. Everything else
the AwsSolutions and Serverless packs report fails the synth."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from stacks.pipeline_stack import PipelineStack

XRAY = (
    "AwsSolutions-IAM5[Resource::*]",
    "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.",
)
PASSED_THROUGH = (
    "Serverless-LambdaTracing",
    "Lambda samples actively traced functions at a fixed 1 request a second plus 5% of the rest, which no "
    "sampling rule changes: at production volume that traces nearly every webhook, about $5 per million, as "
    "much as the rest of its path. Environments with that volume pass tracing through (tracing_active in "
    "stacks/config/environments.py; lanectl plan prices traces where it is on).",
)
SYNC_INVOKED = (
    "Serverless-LambdaDLQ",
    "Invoked synchronously (API Gateway or an SQS event source mapping); an async dead-letter target would "
    "never receive anything. SQS failures are dead-lettered by the lane queue's redrive policy.",
)


def _ack(construct: IConstruct, rule: str, reason: str) -> None:
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


def acknowledge(stack: PipelineStack) -> None:
    functions = [
        stack.ingress.webhook,
        stack.ingress.jobs,
        stack.sweeper.sweeper,
        *(consumer.consumer for consumer in stack.consumers.values()),
    ]
    for function in functions:
        _ack(function.role, *XRAY)
        if not stack.config.tracing_active:
            _ack(function.function, *PASSED_THROUGH)
    for function in (stack.ingress.webhook, stack.ingress.jobs, *(c.consumer for c in stack.consumers.values())):
        _ack(function.function, *SYNC_INVOKED)
    _ack(
        stack.sweeper.sweeper.function,
        "Serverless-LambdaDLQ",
        "The sweep runs on a schedule with no retries; a failed sweep is made up by the next one, and the "
        "unprocessed-age alarm treats missing data as breaching, so a sweeper that keeps failing pages.",
    )
    for consumer in stack.consumers.values():
        _ack(
            consumer.mapping,
            "Serverless-LambdaEventSourceMappingDestination",
            "SQS event sources do not support on-failure destinations; the lane queue's redrive policy "
            "(maxReceiveCount from the catalogue) moves failed messages to the lane's dead-letter queue.",
        )
    for queues in stack.lane_queues.values():
        _ack(
            queues.dead_letters,
            "Serverless-SQSRedrivePolicy",
            "This is the lane's dead-letter queue: it keeps messages 14 days, alarms at depth >= 1, and is "
            "redriven by an operator (lanectl dlq redrive), never automatically.",
        )
    for route in stack.ingress.webhook_routes:
        _ack(
            route,
            "AwsSolutions-APIG4",
            "Meta webhook route: Meta cannot sign requests for IAM or present tokens; every POST is "
            "authenticated in the function by the HMAC-SHA256 signature over the raw body, and GET only "
            "answers the verification handshake when the configured verify token matches.",
        )
    for rule in stack.schedule_rules:
        _ack(
            rule,
            "Serverless-EventBusDLQ",
            "Scheduled rule: a missed delivery is superseded by the next period (sweeps and ticks are "
            "periodic and ticks expire at their cadence), so a target DLQ would only collect stale events.",
        )
    _ack(
        stack.secret,
        "AwsSolutions-SMG4",
        "Meta app secrets are issued and rotated in Meta's app dashboard, not by AWS; the ingress accepts the "
        "previous secret alongside the current one so a rotation needs no downtime.",
    )
