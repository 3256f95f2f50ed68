"""The write path over moto (tests/unit/privacy/conftest.py's pipeline) with `lanes-dev` naming
every lane's queue, so `lanectl trace --tenant` and `lanectl replay` run against real handlers'
rows and send to the queues the consumers drain."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops.resolve import output_prefix
from tests.support.aws import REGION
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic  # noqa: F401
from tests.unit.privacy.conftest import lanectl, pipeline  # noqa: F401


@pytest.fixture
def stack(pipeline) -> dict[str, str]:  # noqa: F811
    resources = pipeline.deployed.resources
    outputs = {
        "WebhookTableName": resources.webhook_table,
        "JobsTableName": resources.jobs_table,
        "StateTableName": resources.state_table,
        "DataTableName": resources.data_table,
        "SenderKeyArn": resources.sender_key_arn,
    }
    for lane, url in resources.queue_urls.items():
        prefix = output_prefix(lane)
        outputs[f"{prefix}QueueUrl"] = url
        outputs[f"{prefix}QueueArn"] = pipeline.deployed.queue_arns[lane]
        outputs[f"{prefix}DlqUrl"] = resources.dlq_urls[lane]
        outputs[f"{prefix}DlqArn"] = pipeline.deployed.dlq_arns[lane]
        outputs[f"{prefix}MappingId"] = "mapping"
        outputs[f"{prefix}FunctionName"] = f"consumer-{lane}"
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="lanes-dev", TemplateBody=json.dumps(template)
    )
    return outputs


def snapshot(pipeline, stack) -> dict[str, Any]:  # noqa: F811
    """Every item of every table and the depth of every queue: what "nothing changed" compares."""
    sqs = boto3.client("sqs", region_name=REGION)
    tables = {
        name: sorted(repr(sorted(i.items())) for i in pipeline.items(table))
        for name, table in stack.items()
        if name.endswith("TableName")
    }
    depths = {
        name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
        for name, url in stack.items()
        if name.endswith(("QueueUrl", "DlqUrl"))
    }
    return {"tables": tables, "queues": depths}
