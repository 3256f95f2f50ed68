"""The write path over moto (tests/unit/privacy/conftest.py's pipeline) with `lanes-dev` naming
every lane's queue, so `lanectl trace --tenant` and `lanectl replay` run against real handlers'
rows and send to the queues the consumers drain."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.support.aws import REGION
from tests.support.lanectl_stack import lane_outputs, publish, table_outputs
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic  # noqa: F401
from tests.unit.privacy.conftest import lanectl, pipeline  # noqa: F401


@pytest.fixture
def stack(pipeline) -> dict[str, str]:  # noqa: F811
    return publish(table_outputs(pipeline) | lane_outputs(pipeline))


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
