"""What IAM evaluates for one API call: an action on a resource, once, or once per item.

- DynamoDB: a `Query` or `Scan` with an `IndexName` is asked of the index's ARN
  (`table/<name>/index/<index>`), not the table's; a transaction asks, for each of its items, the
  action that item performs (Put is `PutItem`, Update `UpdateItem`, Delete `DeleteItem`,
  ConditionCheck `ConditionCheckItem`, Get `GetItem`) on that item's table, with
  `dynamodb:EnclosingOperation` naming the transaction; a batch asks `BatchGetItem` or
  `BatchWriteItem` of each table it names.
- SQS: queues by ARN (from the queue URL); a batch call asks the action of its single form
  (`SendMessageBatch` is `sqs:SendMessage`).
- Secrets Manager: the secret's full ARN, whatever form of its id the caller gave.
- Bedrock: Converse is `bedrock:InvokeModel` on the model's ARN; with an inference profile, on the
  profile's and on its model's in the caller's region.
- SNS: `Publish` on the topic, and on an encrypted topic the publisher's use of its key
  (`kms:GenerateDataKey*` and `kms:Decrypt`).
A call this module has no rule for is not allowed to anyone but the runtime itself: a new kind of
call is then noticed at once, not waved through.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Ask:
    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)
    key: bool = False
    """The resource is a KMS key: its key policy decides (evaluation.py)."""


class NoRule(LookupError):
    """The runtime does not know what IAM asks of this call."""


@dataclass(frozen=True)
class Lookups:
    """What turning a call into its resources needs from the emulated account."""

    secret_arn: Callable[[str], str]
    """A secret's ARN from any id a caller may give (name, partial or full ARN)."""
    topic_key: Callable[[str], str | None]
    """The ARN of the KMS key a topic is encrypted with, if any."""


_BATCHED = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}
_LAMBDA_ACTIONS = {"Invoke": "InvokeFunction"}
_TRANSACT_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
    "Get": "dynamodb:GetItem",
}
FREE = frozenset({("sts", "GetCallerIdentity")})
"""Calls IAM never refuses."""


def asks(
    service: str, operation: str, params: Mapping[str, Any], *, region: str, account: str, lookups: Lookups
) -> list[Ask]:
    if (service, operation) in FREE:
        return []
    rule = _RULES.get(service)
    if rule is None:
        raise NoRule(f"{service}:{operation}")
    return rule(operation, params, region, account, lookups)


def table_arn(name: str, region: str, account: str) -> str:
    return name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def _dynamodb(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    if operation in ("TransactWriteItems", "TransactGetItems"):
        found = []
        for item in params.get("TransactItems", ()):
            ((kind, body),) = item.items()
            found.append(
                Ask(
                    _TRANSACT_ACTIONS[kind],
                    table_arn(body["TableName"], region, account),
                    {"dynamodb:EnclosingOperation": operation},
                )
            )
        return found
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [Ask(f"dynamodb:{operation}", table_arn(t, region, account)) for t in params.get("RequestItems", {})]
    if operation == "ListTables":
        return [Ask("dynamodb:ListTables", "*")]
    if "TableName" not in params:
        raise NoRule(f"dynamodb:{operation}")
    resource = table_arn(params["TableName"], region, account)
    if operation in ("Query", "Scan") and params.get("IndexName"):
        resource = f"{resource}/index/{params['IndexName']}"
    return [Ask(f"dynamodb:{operation}", resource)]


@functools.lru_cache(maxsize=1024)
def queue_arn(url: str, region: str, account: str) -> str:
    """A queue's ARN from its URL (a process sends to a handful of queues: remembered)."""
    split = urlsplit(url)
    parts = [p for p in split.path.split("/") if p]
    if len(parts) < 2:
        raise NoRule(f"a queue URL of {url!r}")
    owner, name = parts[-2], parts[-1]
    host_region = (split.hostname or "").split(".")
    queue_region = host_region[1] if len(host_region) > 2 and host_region[0] == "sqs" else region
    return f"arn:aws:sqs:{queue_region}:{owner}:{name}"


def _sqs(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    action = f"sqs:{_BATCHED.get(operation, operation)}"
    if operation == "ListQueues":
        return [Ask(action, f"arn:aws:sqs:{region}:{account}:*")]
    if operation in ("CreateQueue", "GetQueueUrl"):
        owner = params.get("QueueOwnerAWSAccountId") or account
        return [Ask(action, f"arn:aws:sqs:{region}:{owner}:{params['QueueName']}")]
    if operation in ("StartMessageMoveTask", "ListMessageMoveTasks"):
        return [Ask(action, params["SourceArn"])]
    if "QueueUrl" not in params:
        raise NoRule(action)
    return [Ask(action, queue_arn(params["QueueUrl"], region, account))]


def _secretsmanager(
    operation: str, params: Mapping[str, Any], region: str, account: str, lookups: Lookups
) -> list[Ask]:
    action = f"secretsmanager:{operation}"
    if "SecretId" not in params:
        if operation in ("ListSecrets", "GetRandomPassword", "BatchGetSecretValue"):
            return [Ask(action, "*")]
        if operation == "CreateSecret":
            return [Ask(action, f"arn:aws:secretsmanager:{region}:{account}:secret:{params['Name']}-??????")]
        raise NoRule(action)
    return [Ask(action, lookups.secret_arn(params["SecretId"]))]


def _sns(operation: str, params: Mapping[str, Any], region: str, account: str, lookups: Lookups) -> list[Ask]:
    action = f"sns:{operation}"
    if operation in ("ListTopics", "ListSubscriptions", "CreateTopic"):
        return [Ask(action, f"arn:aws:sns:{region}:{account}:{params.get('Name', '*')}")]
    topic = params.get("TopicArn") or params.get("TargetArn")
    if topic is None:
        if "SubscriptionArn" in params:
            return [Ask(action, params["SubscriptionArn"].rsplit(":", 1)[0])]
        raise NoRule(action)
    found = [Ask(action, topic)]
    key = lookups.topic_key(topic) if operation in ("Publish", "PublishBatch") else None
    if key is not None:
        found += [Ask("kms:GenerateDataKey", key, key=True), Ask("kms:Decrypt", key, key=True)]
    return found


def _lambda(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    action = f"lambda:{_LAMBDA_ACTIONS.get(operation, operation)}"
    if "UUID" in params:
        return [Ask(action, f"arn:aws:lambda:{region}:{account}:event-source-mapping:{params['UUID']}")]
    if "FunctionName" in params:
        name = params["FunctionName"]
        arn = name if name.startswith("arn:") else f"arn:aws:lambda:{region}:{account}:function:{name}"
        return [Ask(action, arn)]
    if operation in ("ListFunctions", "ListEventSourceMappings"):
        return [Ask(action, "*")]
    raise NoRule(action)


def _cloudwatch(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    action = f"cloudwatch:{operation}"
    if operation == "PutMetricData":
        return [Ask(action, "*", {"cloudwatch:namespace": params.get("Namespace", "")})]
    if operation == "SetAlarmState":
        return [Ask(action, f"arn:aws:cloudwatch:{region}:{account}:alarm:{params['AlarmName']}")]
    return [Ask(action, "*")]


def _kms(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    key = params.get("KeyId")
    if key is None:
        raise NoRule(f"kms:{operation}")
    arn = key if key.startswith("arn:") else f"arn:aws:kms:{region}:{account}:key/{key}"
    return [Ask(f"kms:{operation}", arn, key=True)]


def _ssm(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    name = params.get("Name")
    if name is None:
        raise NoRule(f"ssm:{operation}")
    return [Ask(f"ssm:{operation}", f"arn:aws:ssm:{region}:{account}:parameter/{name.lstrip('/')}")]


_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "global.")
_BEDROCK_ACTIONS = {
    "Converse": "bedrock:InvokeModel",
    "InvokeModel": "bedrock:InvokeModel",
    "ConverseStream": "bedrock:InvokeModelWithResponseStream",
    "InvokeModelWithResponseStream": "bedrock:InvokeModelWithResponseStream",
}


def _bedrock_runtime(operation: str, params: Mapping[str, Any], region: str, account: str, _: Lookups) -> list[Ask]:
    action = _BEDROCK_ACTIONS.get(operation)
    model_id = str(params.get("modelId") or "")
    if action is None or not model_id:
        raise NoRule(f"bedrock:{operation}")
    if model_id.startswith("arn:"):
        return [Ask(action, model_id)]
    if model_id.startswith(_PROFILE_PREFIXES):
        return [
            Ask(action, f"arn:aws:bedrock:{region}:{account}:inference-profile/{model_id}"),
            Ask(action, f"arn:aws:bedrock:{region}::foundation-model/{model_id.split('.', 1)[1]}"),
        ]
    return [Ask(action, f"arn:aws:bedrock:{region}::foundation-model/{model_id}")]


_RULES: dict[str, Callable[[str, Mapping[str, Any], str, str, Lookups], list[Ask]]] = {
    "dynamodb": _dynamodb,
    "sqs": _sqs,
    "secretsmanager": _secretsmanager,
    "sns": _sns,
    "lambda": _lambda,
    "cloudwatch": _cloudwatch,
    "kms": _kms,
    "ssm": _ssm,
    "bedrock-runtime": _bedrock_runtime,
}
