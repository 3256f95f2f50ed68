"""At most once against a strict Graph endpoint: it records each send and then answers 500 (Meta's
code 1), 502 (a gateway's page), 504 (no body), stalls past the client's timeout, or drops the
connection as soon as it has read the body. Over 30 turns of each, driven through the ai lane's
consumer (the real GraphSender, moto underneath): no turn is sent twice, and every turn ends
either answered (its status came back and resolved it) or unanswered and counted in the metric
the UnansweredReplies alarm reads."""

from __future__ import annotations

import time

import pytest

from pipeline import metric_names
from pipeline.domain.envelope import Envelope
from pipeline.tasks import ai, replies
from tests.unit.consumer.handler_output import line_metric_total
from tests.unit.consumer.lane_env import with_lane

SHOP = "shop-1"
PHONE_ID = "1098765"
TURNS = 30
CLIENT_TIMEOUT = 0.1
"""The sender's wait for an answer where the endpoint stalls (Lambda's is 10 s): the stall outlasts it."""


def _customer(turn: int) -> str:
    return f"1555000{turn:04d}"


def _queue_turns(h) -> None:
    """30 turns whose replies are stored and waiting to be sent, as tasks/ai.py leaves them."""
    table = h.dynamodb.Table("data")
    for turn in range(TURNS):
        conversation = _customer(turn)
        table.put_item(
            Item={
                **replies.reply_key(ai.conversation_pk(SHOP, conversation), "m1"),
                "text": f"reply {turn}",
                "send_state": "pending",
            }
        )
        reply_to = {"channel": "whatsapp", "business_id": PHONE_ID, "recipient": conversation}
        base = Envelope(
            id=f"turn-{turn}", lane="ai", tenant=SHOP, kind=ai.TURN, source="internal", created_at=time.time()
        )
        h.send(
            replies.send_envelope(
                base, f"turn-{turn}", {"conversation": conversation, "token": "m1", "reply_to": reply_to}
            )
        )


def _statuses_of(graph, customers: set[str]) -> list[dict]:
    """The statuses Meta sent back for these customers' messages (it sends them a moment after it takes one)."""
    found: list[dict] = []
    for _ in range(100):
        found = [
            s
            for d in graph.statuses_delivered
            for s in d["entry"][0]["changes"][0]["value"]["statuses"]
            if s["recipient_id"] in customers
        ]
        if len(found) >= len(customers):
            break
        time.sleep(0.02)
    return found


def _delivery(statuses: list[dict]) -> dict:
    value = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": PHONE_ID}, "statuses": statuses}
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": PHONE_ID, "changes": [{"field": "messages", "value": value}]}],
    }


@pytest.mark.parametrize("mode", ["500", "502", "504", "stall", "drop"])
def test_no_turn_is_sent_twice_and_every_turn_is_answered_or_counted_unanswered(lane, graph, caplog, mode):
    # Given an endpoint that takes every message and then fails to say so
    graph.configure(after_send=mode, hold_seconds=CLIENT_TIMEOUT * 3, status_delay_ms=0)
    ai_lane, messages = lane("ai"), lane("messages")
    # The lane's failure window would pause it once most sends fail (tests/unit/domain/test_send_failure_window.py),
    # holding the rest of the turns back: here every turn is sent, to show what each send's outcome becomes.
    ai_lane.environ = with_lane(
        ai_lane.environ, options={"resolve_seconds": "0", "resolve_rounds": "2"}, pause_on_failures=None
    )
    ai_lane.environ["GRAPH_API_URL"] = graph.url
    seams = {"send_timeout_seconds": CLIENT_TIMEOUT} if mode == "stall" else {}
    handler, statuses_handler = ai_lane.handler(**seams), messages.handler()
    _queue_turns(ai_lane)
    # Meta's statuses reach the webhook for the even turns; the odd turns' are lost
    answered = {_customer(turn) for turn in range(0, TURNS, 2)}
    fed: set[str] = set()
    # When the lane works through the sends and their resolution, each status applied as it comes
    # (a send the number's rate defers comes back a second or two later: waited for, up to a bound)
    give_up = time.monotonic() + 60  # a bound, not a timing: the loop ends once the lane is empty
    while ai_lane.depth() and time.monotonic() < give_up:
        _, received = ai_lane.poll(handler, visibility=0)
        if not received:
            time.sleep(0.1)
        taken = {sent.recipient for sent in graph.outbox()} & answered - fed
        if taken:
            messages.send(messages.webhook_row(_delivery(_statuses_of(graph, taken)), tenant=PHONE_ID))
            messages.poll(statuses_handler)
            fed |= taken
    # Then every turn was sent exactly once: the endpoint recorded each, none twice
    sends = [sent.recipient for sent in graph.outbox()]
    assert sorted(sends) == sorted(_customer(turn) for turn in range(TURNS))
    # And each turn is answered (its status resolved it) or unanswered, never left waiting
    for turn in range(TURNS):
        customer = _customer(turn)
        stored = ai_lane.data(ai.conversation_pk(SHOP, customer), "reply#m1")
        expected = ("sent", None) if customer in answered else ("unanswered", "outcome_unknown")
        assert (stored["send_state"], stored.get("send_error")) == expected, customer
    # And the unanswered are counted in the series the UnansweredReplies alarm reads
    assert line_metric_total(caplog, metric_names.REPLIES_UNANSWERED, Lane="ai", service="consumer-ai") == TURNS - len(
        answered
    )
