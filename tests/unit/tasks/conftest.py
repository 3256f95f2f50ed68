from __future__ import annotations

import pytest

from local_aws.graph_fake import GraphFake
from tests.support.aws import META_ACCESS_TOKEN

# The tasks are exercised through the consumer, with the consumer tests' harness and fixtures.
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic, lane  # noqa: F401


@pytest.fixture
def graph():
    """Meta's Graph API, its statuses for sent replies kept (`statuses_delivered`) for a test to deliver."""
    fake = GraphFake(token=META_ACCESS_TOKEN)
    statuses: list[dict] = []
    fake.deliver = statuses.append
    fake.statuses_delivered = statuses  # type: ignore[attr-defined]
    fake.start()
    yield fake
    fake.stop()
