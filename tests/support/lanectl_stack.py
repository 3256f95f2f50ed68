"""`lanes-dev` as lanectl finds it: a CloudFormation stack on moto whose outputs name the moto
pipeline's tables, queues and secrets, so lanectl's own resolving (ops/resolve.py) runs in tests."""

from __future__ import annotations

import json
from typing import Any

import boto3

from ops.resolve import output_prefix
from tests.support.aws import REGION


def table_outputs(pipeline: Any) -> dict[str, str]:
    resources = pipeline.deployed.resources
    return {
        "WebhookTableName": resources.webhook_table,
        "JobsTableName": resources.jobs_table,
        "StateTableName": resources.state_table,
        "DataTableName": resources.data_table,
        "SenderKeyArn": resources.sender_key_arn,
    }


def lane_outputs(pipeline: Any) -> dict[str, str]:
    """Every lane's queue, DLQ, mapping and consumer, as the stack names them."""
    resources = pipeline.deployed.resources
    outputs: dict[str, str] = {}
    for lane, url in resources.queue_urls.items():
        prefix = output_prefix(lane)
        outputs |= {
            f"{prefix}QueueUrl": url,
            f"{prefix}QueueArn": pipeline.deployed.queue_arns[lane],
            f"{prefix}DlqUrl": resources.dlq_urls[lane],
            f"{prefix}DlqArn": pipeline.deployed.dlq_arns[lane],
            f"{prefix}MappingId": "mapping",
            f"{prefix}FunctionName": f"consumer-{lane}",
        }
    return outputs


def publish(outputs: dict[str, str]) -> dict[str, str]:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="lanes-dev", TemplateBody=json.dumps(template)
    )
    return outputs
