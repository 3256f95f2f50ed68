"""The local Graph API enforces Meta's rates as Meta does: never more than a number's throughput
in any one second (130429 beyond it) or than the pair limit to one recipient (131056); and the
consumer's rate budget in front of it keeps a number under its rate when offered twice as much."""

from __future__ import annotations

import time

import pytest

from local_aws.graph_fake import GraphFake
from pipeline.adapters.graph_api import GraphSender
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.dependencies.rates import RateKeeper, whatsapp_number
from tests.unit.domain.test_rates import Counters, _most_in_any_window

TOKEN = "token-1"
NUMBER = "1098765"


class Token:
    def get(self) -> str:
        return TOKEN

    def forget(self) -> None:
        return


@pytest.fixture
def graph():
    fake = GraphFake(token=TOKEN)
    fake.start()
    yield fake
    fake.stop()


def _send(sender: GraphSender, recipient: str) -> ms.Sent | Exception:
    try:
        return sender.send(ms.ReplyTo(ms.WHATSAPP, NUMBER, recipient), "hello", "cb", timeout=2.0)
    except (ms.SendRefused, ms.SendRejected) as exc:
        return exc


def test_the_fake_accepts_no_more_than_its_rate_in_any_second_and_refuses_the_rest_with_130429(graph):
    graph.configure(messages_per_second=5)
    sender = GraphSender(graph.url, Token())  # type: ignore[arg-type]
    answers = [_send(sender, f"1555000{n:04d}") for n in range(10)]
    accepted = [sent.at for sent in graph.outbox()]
    refused = [answer for answer in answers if isinstance(answer, Exception)]
    assert _most_in_any_window(accepted, 1.0) <= 5
    assert len(accepted) + len(refused) == 10
    assert refused
    assert all(isinstance(r, ms.SendRefused) and r.slow and r.code == 130429 for r in refused)
    assert {r.code for r in graph.refused()} == {130429}


def test_the_fake_refuses_a_second_message_to_one_recipient_within_the_pair_window_with_131056(graph):
    graph.configure(pair_messages=1, pair_seconds=30.0)
    sender = GraphSender(graph.url, Token())  # type: ignore[arg-type]
    first, again, other = (_send(sender, r) for r in ("15551230001", "15551230001", "15551230002"))
    assert isinstance(first, ms.Sent)
    assert isinstance(other, ms.Sent)
    assert isinstance(again, ms.SendRefused)
    assert again.slow
    assert again.code == 131056


def test_offered_twice_the_rate_the_budget_in_front_sends_no_more_than_the_rate_in_any_second(graph):
    # Given the fake enforcing 12 a second and a rate budget of 12 a second in front of it
    rate = whatsapp_number(NUMBER, 12)
    graph.configure(messages_per_second=rate.limit)
    keeper = RateKeeper(Counters(), time.time)
    sender = GraphSender(graph.url, Token())  # type: ignore[arg-type]
    # When 24 a second are offered for two seconds
    offered, deferred = 2 * rate.limit * 2, 0
    started = time.monotonic()
    for n in range(offered):
        time.sleep(max(0.0, started + n / (2 * rate.limit) - time.monotonic()))
        if keeper.take(rate):
            assert isinstance(_send(sender, f"1555000{n:04d}"), ms.Sent)
        else:
            deferred += 1
    # Then Meta refused nothing, and no second held more than the rate
    assert graph.refused() == []
    sent = [s.at for s in graph.outbox()]
    assert _most_in_any_window(sent, 1.0) <= rate.limit
    assert deferred
    assert len(sent) + deferred == offered
