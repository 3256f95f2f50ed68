"""cdk-nag acknowledgements, each with the reason it is right for this pipeline. Everything else
the AwsSolutions and Serverless packs report fails the synth."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from stacks.constructs.alarms import OnCall
from stacks.pipeline_stack import PipelineStack

XRAY = (
    "AwsSolutions-IAM5[Resource::*]",
    "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.",
)
PASSED_THROUGH = (
    "Serverless-LambdaTracing",
    "Lambda samples actively traced functions at a fixed 1 request a second plus 5% of the rest, which no "
    "sampling rule changes: at production volume that traces nearly every webhook, about $5 per million, as "
    "much as the rest of its path. Environments with that volume do not trace (tracing_active in "
    "stacks/config/environments.py; lanectl plan prices traces where it is on).",
)
CHAT_NOTIFICATION_READS = (
    (
        "AwsSolutions-IAM5[Resource::*]",
        "A chat channel's role and guardrail read what an alarm notification shows: CloudWatch's metric data, "
        "graph images and metric lists, whose calls have no resource-level permissions.",
    ),
    *(
        (
            f"AwsSolutions-IAM5[Action::{action}]",
            "Read-only CloudWatch calls, as AWS's Chatbot 'Notification permissions' template grants them: Chatbot "
            "documents what its notifications read only as that template, and a narrower list risks a page shown "
            "without its alarm's graph. The guardrail is no wider, so no one in the channel can change anything.",
        )
        for action in ("cloudwatch:Describe*", "cloudwatch:Get*", "cloudwatch:List*")
    ),
)
FINDS_OWN_MAPPING = (
    "AwsSolutions-IAM5[Resource::*]",
    "lambda:ListEventSourceMappings has no resource-level permission. A lane that pauses itself lists to find "
    "its own mapping's id, which its variables cannot hold (the mapping is made from the function); the one "
    "update it may make is on that mapping only (stacks/constructs/self_pause.py).",
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
        stack.erasure.door,
        stack.sweeper.sweeper,
        stack.lane_probe.probe,
        stack.after_deploy.guard,
        *(consumer.consumer for consumer in stack.consumers.values()),
    ]
    for function in functions:
        _ack(function.role, *XRAY)
        if not stack.config.tracing_active:
            _ack(function.function, *PASSED_THROUGH)
    for function in (
        stack.ingress.webhook,
        stack.ingress.jobs,
        stack.erasure.door,
        *(c.consumer for c in stack.consumers.values()),
    ):
        _ack(function.function, *SYNC_INVOKED)
    _ack(
        stack.sweeper.sweeper.function,
        "Serverless-LambdaDLQ",
        "The sweep runs on a schedule with no retries; a failed sweep is made up by the next one, and the "
        "sweeper-silent alarms page when three periods in a row hold no report, so a sweeper that keeps failing "
        "pages.",
    )
    _ack(
        stack.lane_probe.probe.function,
        "Serverless-LambdaDLQ",
        "The probe runs on a schedule with no retries; a failed run is made up by the next one, and its errors "
        "alarm pages when runs keep failing.",
    )
    _ack(
        stack.after_deploy.guard.function,
        "Serverless-LambdaDLQ",
        "CloudFormation invokes it synchronously as a custom resource and waits for its answer: a failure "
        "fails the deploy, which says why; there is nothing for a dead-letter queue to keep.",
    )
    for consumer in stack.consumers.values():
        if consumer.pause_policy is not None:
            _ack(consumer.pause_policy, *FINDS_OWN_MAPPING)
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
    for route in stack.erasure_routes:
        _ack(
            route,
            "AwsSolutions-APIG4",
            "Meta's data-deletion callback cannot sign for IAM or present a token: every POST is authenticated in the "
            "function by the signed_request's HMAC-SHA256 under the app secret. The status page is meant for the "
            "person who asked, who holds only the confirmation code: 128 random bits, which the function checks.",
        )
    for rule in stack.schedule_rules:
        _ack(
            rule,
            "Serverless-EventBusDLQ",
            "Scheduled rule: a missed delivery is superseded by the next period (sweeps and ticks are "
            "periodic and ticks expire at their cadence), so a target DLQ would only collect stale events.",
        )
    _acknowledge_on_call(stack.on_call)
    _ack(
        stack.secret,
        "AwsSolutions-SMG4",
        "Meta issues and resets the app secret in its app dashboard; AWS cannot create one, so Secrets Manager "
        "rotation has nothing to call. Rotation is the manual step in docs/RUNBOOK.md: the old secret is kept as "
        "previous_app_secret until its previous_expires_at, warm doors read the new one within the cache time or "
        "sooner on a mismatched signature, and a delivery Meta signs with the new secret before it is stored here "
        "is refused 403 and retried by Meta.",
    )
    _ack(
        stack.jobs_callers,
        "AwsSolutions-SMG4",
        "The jobs API's callers are access rules written from the config at every deploy, not a credential: "
        "there is nothing to rotate. A secret holds them because they outgrow a function's environment.",
    )
    _ack(
        stack.sender_key,
        "AwsSolutions-SMG4",
        "The sender key is the HMAC key every row and item about a person is indexed by, so that an erasure request "
        "finds them; a rotated key would leave everything indexed before it unfindable, and an erasure would "
        "silently miss it. It is generated at the first deploy, never leaves AWS, and is read only by the functions "
        "that index or erase.",
    )
    _ack(
        stack.access_token,
        "AwsSolutions-SMG4",
        "Meta issues the access token (a system user's, in Meta Business Manager); AWS cannot create one, so "
        "Secrets Manager rotation has nothing to call. Rotation is the manual step in docs/RUNBOOK.md: the new "
        "token is stored here, warm consumers read it within a minute, and one Meta refuses (190) is read again at "
        "the next send.",
    )
    _ack(
        stack.callback_key,
        "AwsSolutions-SMG4",
        "The reply callback key signs the references replies are sent with, which Meta echoes in its statuses; "
        "it never leaves AWS and is read only by the lanes that sign and verify them. Rotation is the manual step "
        "in docs/RUNBOOK.md: the old key is kept as previous_callback_key until its previous_expires_at, so the "
        "statuses of replies in flight still verify.",
    )
    if stack.edge is not None:
        _acknowledge_edge(stack.edge.distribution)


def _acknowledge_on_call(on_call: OnCall) -> None:
    for recovery in on_call.recovery_rules:
        _ack(
            recovery,
            "Serverless-EventBusDLQ",
            "Carries an alarm's return to OK to the on-call topic. EventBridge retries a failed publish for 24 "
            "hours; after that the notice is stale, and the alarm's own state says the trouble is over, so a "
            "dead-letter queue would keep only what nobody needs to read.",
        )
    for channel in on_call.subscribers.chat_channels:
        for rule, reason in CHAT_NOTIFICATION_READS:
            _ack(channel.role, rule, reason)
            _ack(channel.guardrail, rule, reason)
    undelivered = on_call.subscribers.undelivered
    if undelivered is not None:
        for rule in ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"):
            _ack(
                undelivered,
                rule,
                "This queue is the dead-letter queue of the on-call topic's email and https subscriptions (SNS "
                "redrive, which cdk-nag does not see): it keeps undelivered pages 14 days and alarms at depth >= 1; "
                "a dead-letter queue of its own would hold nothing.",
            )


def _acknowledge_edge(distribution: IConstruct) -> None:
    _ack(
        distribution,
        "AwsSolutions-CFR1",
        "Meta delivers webhooks from data centres in several countries and publishes no list of them to allow; a "
        "geo restriction would refuse genuine deliveries. Abuse is limited per source address by the web ACL's "
        "rate-based rule instead.",
    )
    _ack(
        distribution,
        "AwsSolutions-CFR3",
        "Standard access logs would need an S3 bucket with ACLs enabled. Requests the edge blocks are logged by "
        "AWS WAF (client address, rule, path; query string redacted) and every request it lets through by the API "
        "stage's access log, which then shows the edge's address rather than the client's (README, The edge).",
    )
    _ack(
        distribution,
        "AwsSolutions-CFR4",
        "The distribution uses CloudFront's default *.cloudfront.net certificate, with which CloudFront fixes the "
        "minimum viewer protocol at TLSv1; raising it needs a custom domain with an ACM certificate in us-east-1, "
        "which the environment config does not have.",
    )
