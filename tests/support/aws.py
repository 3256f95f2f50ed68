"""Pipeline resources in moto, shaped as the stack shapes them, for unit tests.

The end-to-end tests deploy the synthesized template instead; these fixtures are for tests that
exercise one handler or adapter and want its tables and queues without a synth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import boto3

from pipeline import schema
from stacks.config.environments import Environment
from stacks.runtime_env import Resources

REGION = "us-east-1"
META_APP_SECRET = "test-app-secret"
META_PREVIOUS_APP_SECRET = "test-previous-app-secret"
META_VERIFY_TOKEN = "test-verify-token"


def _pending_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.ID, "AttributeType": "S"},
            {"AttributeName": schema.PENDING_SHARD, "AttributeType": "S"},
            {"AttributeName": schema.PENDING_SINCE, "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": schema.ID, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": schema.PENDING_INDEX,
                "KeySchema": [
                    {"AttributeName": schema.PENDING_SHARD, "KeyType": "HASH"},
                    {"AttributeName": schema.PENDING_SINCE, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )


def _state_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": schema.PK, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": schema.PK, "KeyType": "HASH"}],
    )


def _data_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.PK, "AttributeType": "S"},
            {"AttributeName": schema.SK, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": schema.PK, "KeyType": "HASH"},
            {"AttributeName": schema.SK, "KeyType": "RANGE"},
        ],
    )


@dataclass(frozen=True)
class Deployed:
    resources: Resources
    dlq_arns: dict[str, str]
    queue_arns: dict[str, str]


def deploy(env: Environment) -> Deployed:
    """Create the pipeline's tables, lane queues (with redrive) and Meta secret in the active moto
    mock, with the settings the catalogue gives `env`."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    secrets = boto3.client("secretsmanager", region_name=REGION)
    _pending_table(dynamodb, "webhook-log")
    _pending_table(dynamodb, "jobs")
    _state_table(dynamodb, "state")
    _data_table(dynamodb, "data")

    queue_urls: dict[str, str] = {}
    dlq_urls: dict[str, str] = {}
    queue_arns: dict[str, str] = {}
    dlq_arns: dict[str, str] = {}
    for lane in env.lanes:
        dlq_url = sqs.create_queue(QueueName=f"{lane.name}-dlq", Attributes={"MessageRetentionPeriod": "1209600"})[
            "QueueUrl"
        ]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        url = sqs.create_queue(
            QueueName=lane.name,
            Attributes={
                "VisibilityTimeout": str(lane.visibility_timeout_seconds),
                "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": lane.max_receives}),
            },
        )["QueueUrl"]
        queue_urls[lane.name] = url
        dlq_urls[lane.name] = dlq_url
        dlq_arns[lane.name] = dlq_arn
        queue_arns[lane.name] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]

    secret_arn = secrets.create_secret(
        Name="meta",
        SecretString=json.dumps(
            {
                "app_secret": META_APP_SECRET,
                "previous_app_secret": META_PREVIOUS_APP_SECRET,
                "verify_token": META_VERIFY_TOKEN,
            }
        ),
    )["ARN"]
    resources = Resources(
        webhook_table="webhook-log",
        jobs_table="jobs",
        state_table="state",
        data_table="data",
        queue_urls=queue_urls,
        dlq_urls=dlq_urls,
        secret_arn=secret_arn,
    )
    return Deployed(resources=resources, dlq_arns=dlq_arns, queue_arns=queue_arns)
