"""`lanectl trace` of a turn's job shows its reply: what became of it, its attempts, Meta's
message id and each status Meta sent for it, with nothing personal unless asked."""

from __future__ import annotations

import json
import time

import pytest

from local_aws.graph_fake import GraphFake
from tests.support.aws import META_ACCESS_TOKEN
from tests.unit.consumer.lane_env import with_lane
from tests.unit.tasks.payloads import FakeVendor

CUSTOMER = "15550002"
PHONE_ID = "2098765"  # acme's number (stacks/config/environments.py binds it)


@pytest.fixture
def graph(pipeline):
    """Meta's send API for the pipeline's ai lane, its statuses kept for the test to deliver."""
    fake = GraphFake(token=META_ACCESS_TOKEN)
    statuses: list[dict] = []
    fake.deliver = statuses.append
    fake.statuses_delivered = statuses  # type: ignore[attr-defined]
    fake.start()
    lane = pipeline.lanes["ai"]
    environ = {
        **with_lane(lane.environ, options={"debounce_seconds": "0", "resolve_seconds": "0"}),
        "GRAPH_API_URL": fake.url,
    }
    vendor = FakeVendor(answers=["We open at ten tomorrow."] * 4)
    pipeline.consumers["ai"] = lane.handler(environ, vendor=vendor, clock=pipeline.clock)
    yield fake
    fake.stop()


def _turn(pipeline, message_id: str) -> str:
    """A customer's message as the product posts it; its job's id."""
    payload = {
        "conversation": CUSTOMER,
        "message_id": message_id,
        "text": "is the shop open",
        "reply_to": {"channel": "whatsapp", "business_id": PHONE_ID, "recipient": CUSTOMER},
    }
    answer = pipeline.submit({"lane": "ai", "kind": "ai.inbound", "tenant": "acme", "payload": payload})
    assert answer["statusCode"] == 202, answer
    return json.loads(answer["body"])["id"]


def _statuses(pipeline, graph, count: int) -> None:
    for _ in range(100):  # Meta's statuses come a moment after its answer
        if len(graph.statuses_delivered) >= count:
            break
        time.sleep(0.02)
    for status in graph.statuses_delivered:
        pipeline.deliver(status)
    pipeline.drain()


def test_a_turn_shows_its_reply_meta_took_and_then_reported_failed(pipeline, stack, graph, lanectl):
    # Given a turn whose reply Meta took, then reported failed: outside the service window
    graph.configure(failed_code=131047, status_delay_ms=0)
    job_id = _turn(pipeline, "wamid.in1")
    pipeline.drain()
    _statuses(pipeline, graph, 2)
    [sent] = graph.outbox()

    # When on-call traces the customer's message's job
    code, out, _ = lanectl("trace", job_id, "--env", "dev")

    # Then the reply's outcome with Meta's code, its attempts, Meta's id and each status are shown
    assert code == 0, out
    assert "  reply        failed: Meta took it, then reported it failed (code 131047)\n" in out
    assert "  attempts     1\n" in out
    assert f"  meta id      {sent.message_id}\n" in out
    assert "  statuses     sent 20" in out
    assert ", failed 20" in out
    assert "reads: DataTableName 1, JobsTableName 1" in out
    # and nothing personal: neither the customer's number nor the reply's words
    assert CUSTOMER not in out
    assert sent.text not in out


def test_a_turn_whose_send_outcome_stayed_unknown_says_so_in_json(pipeline, stack, graph, lanectl):
    # Given a reply Meta took while its answer was a 502, and whose status never came
    graph.configure(after_send="502", statuses=False)
    job_id = _turn(pipeline, "wamid.in2")
    pipeline.drain()

    code, out, _ = lanectl("trace", job_id, "--env", "dev", "--output", "json", "--show-personal")

    assert code == 0, out
    reply = json.loads(out)["reply"]
    assert reply["outcome"] == "unanswered: outcome_unknown after meta_server_error"
    assert (reply["state"], reply["attempts"], reply["message_id"], reply["statuses"]) == ("unanswered", 1, None, {})
    [sent] = graph.outbox()  # sent once, never again
    assert reply["text"] == sent.text


def test_a_job_of_another_kind_shows_no_reply(pipeline, stack, lanectl):
    answer = pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": {"page": 1}})
    code, out, _ = lanectl("trace", json.loads(answer["body"])["id"], "--env", "dev")
    assert code == 0, out
    assert "  reply " not in out
