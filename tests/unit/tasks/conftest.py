from __future__ import annotations

# The tasks are exercised through the consumer, with the consumer tests' harness and fixtures.
from tests.unit.consumer.conftest import _consumer_logs_to_current_stdout, atomic, lane  # noqa: F401
