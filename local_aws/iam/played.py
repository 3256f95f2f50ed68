"""What the AWS services the local runtime plays must be allowed, and what they answer when they
are not, as each service does on AWS:

- Lambda polls a mapping's queue with the function's role: without `sqs:ReceiveMessage`,
  `sqs:DeleteMessage` and `sqs:GetQueueAttributes` on the queue, CreateEventSourceMapping fails,
  and so does this runtime's start. It writes a function's logs with the role too: without
  `logs:CreateLogStream` and `logs:PutLogEvents` on its log group, the lines are lost.
- API Gateway invokes a route's function under the function's resource policy (its
  `AWS::Lambda::Permission`s, source ARN `arn:aws:execute-api:<region>:<account>:<api>/<stage>/<METHOD><path>`);
  refused, the HTTP API answers 500.
- EventBridge delivers a rule's event to a queue under the queue's policy, to a function under its
  permissions (source ARN: the rule); refused, the event is dropped and counted as failed.
- CloudWatch runs an alarm's action under the topic's policy and, for an encrypted topic, the key's
  policy (source ARN: the alarm); refused, the alarm's history says so and nobody is notified.
"""

from __future__ import annotations

from local_aws.iam.enforcer import ENFORCER

CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
WRITE_LOGS = ("logs:CreateLogStream", "logs:PutLogEvents")


class MappingRefused(RuntimeError):
    """CreateEventSourceMapping's answer when the role cannot consume the queue."""


def check_mapping(role_arn: str, function_name: str, queue_arn: str) -> None:
    for action in CONSUME:
        decision = ENFORCER.role_may(role_arn, function_name, action, queue_arn)
        if not decision.allowed:
            raise MappingRefused(
                f"InvalidParameterValueException: The function execution role does not have permissions to call "
                f"{action.split(':', 1)[1]} on SQS ({function_name}, {queue_arn})"
            )


def logs_refusal(role_arn: str, function_name: str, log_group_arn: str) -> str | None:
    stream = f"{log_group_arn.removesuffix(':*')}:log-stream:local"
    for action in WRITE_LOGS:
        decision = ENFORCER.role_may(role_arn, function_name, action, stream)
        if not decision.allowed:
            return f"{function_name}'s role may not {action} on {log_group_arn}: its logs would be lost"
    return None


def api_refusal(
    function_arn: str, api_id: str, account: str, region: str, stage: str, method: str, path: str
) -> str | None:
    source = f"arn:aws:execute-api:{region}:{account}:{api_id}/{stage}/{method}{path}"
    decision = ENFORCER.service_may(
        "apigateway.amazonaws.com", "lambda:InvokeFunction", function_arn, source_arn=source
    )
    if decision.allowed:
        return None
    return f"API Gateway may not invoke {function_arn} for {source}: no permission of the function allows it"


def rule_refusal(action: str, target_arn: str, rule_arn: str) -> str | None:
    decision = ENFORCER.service_may("events.amazonaws.com", action, target_arn, source_arn=rule_arn)
    return (
        None if decision.allowed else f"events.amazonaws.com is not authorized to perform: {action} {decision.reason}"
    )


def rule_publish_refusal(rule_arn: str, topic_arn: str) -> str | None:
    """EventBridge publishing a rule's event to an encrypted topic: the topic's policy, then its key's."""
    refused = rule_refusal("sns:Publish", topic_arn, rule_arn)
    if refused is not None:
        return refused
    key = ENFORCER.lookups.topic_key(topic_arn)
    if key is not None:
        for action in ("kms:GenerateDataKey", "kms:Decrypt"):
            refused = rule_refusal(action, key, rule_arn)
            if refused is not None:
                return refused
    return None


def alarm_action_refusal(alarm_arn: str, topic_arn: str) -> str | None:
    """CloudWatch's own words, as the alarm's history gives them when the action fails."""
    decision = ENFORCER.service_may("cloudwatch.amazonaws.com", "sns:Publish", topic_arn, source_arn=alarm_arn)
    if not decision.allowed:
        return f"CloudWatch Alarms is not authorized to perform: SNS:Publish on resource:{topic_arn}"
    key = ENFORCER.lookups.topic_key(topic_arn)
    if key is not None:
        for action in ("kms:GenerateDataKey", "kms:Decrypt"):
            decision = ENFORCER.service_may("cloudwatch.amazonaws.com", action, key, source_arn=alarm_arn)
            if not decision.allowed:
                return (
                    "CloudWatch Alarms does not have authorization to access the SNS topic encryption key "
                    f"({action} on {key})"
                )
    return None
