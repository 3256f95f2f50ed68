"""A dependency's refusal as over its rate slows the key down for the instance that saw it: Meta's
429 (130429) for the sending number, Bedrock's ThrottlingException for the model. Meta's says the
number itself is over, so every instance's replies from that number wait out its window too; its
pair rate (131056) is one customer's, and slows no other reply."""

from __future__ import annotations

import pytest

from pipeline.domain.consumer.task_context import TaskRun
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.dependencies.model import ModelThrottled
from pipeline.domain.dependencies.rates import RateKeeper, model_requests, whatsapp_number
from pipeline.domain.errors import DependencyBusy
from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from tests.unit.domain.test_rates import Counters
from tests.unit.tasks.payloads import envelope

REPLY_TO = ms.ReplyTo(ms.WHATSAPP, "1098765", "15551230001")


def metas_error(code: int, message: str, details: str) -> dict:
    """Meta's error body, as the Graph API answers it."""
    return {
        "error": {
            "message": message,
            "type": "OAuthException",
            "code": code,
            "error_data": {"messaging_product": "whatsapp", "details": details},
            "fbtrace_id": "AbCdEfGh123",
        }
    }


THROUGHPUT = metas_error(130429, "(#130429) Rate limit hit", "Cloud API message throughput has been reached.")
PAIR_RATE = metas_error(
    131056,
    "(#131056) (Business Account, Consumer Account) pair rate limit hit",
    "Message failed to send because there were too many messages sent from this phone number to the same "
    "phone number in a short period of time.",
)


class RateLimitedMeta:
    def __init__(self, body: dict = THROUGHPUT) -> None:
        self.body = body

    def send(self, reply_to: ms.ReplyTo, text: str, callback: str, *, timeout: float) -> ms.Sent:
        raise ms.error_for(400, self.body)


def _run(keeper: RateKeeper, **changes) -> TaskRun:
    given = {
        "envelope": envelope("ai", "reply.send"),
        "payload": {},
        "lane": "ai",
        "options": {},
        "now": 1000.0,
        "vendor": None,
        "reader": None,
        "meta": RateLimitedMeta(),
        "callbacks": None,
        "write_now": lambda write: True,
        "budgets": None,
        "dependency": None,
        "limit_seconds": 10.0,
        "on_over_budget": lambda grant: None,
        "hasher": str,
        "eraser": None,
        "rates": keeper,
        "send_per_second": 80,
        "assets": AssetBinding({"t1": TenantAssets(phones=(REPLY_TO.business_id,))}),
        **changes,
    }
    return TaskRun(**given)  # type: ignore[arg-type]


def test_metas_rate_limit_halves_the_numbers_allowed_rate():
    keeper = RateKeeper(Counters(), lambda: 1000.0)
    run = _run(keeper)
    run.send_room(REPLY_TO)
    with pytest.raises(ms.SendRefused):
        run.meta.send(REPLY_TO, "hi", "cb", timeout=1.0)
    assert keeper.allowed(whatsapp_number(REPLY_TO.business_id, 80)) == 40


def test_bedrocks_throttling_halves_the_models_allowed_rate():
    keeper = RateKeeper(Counters(), lambda: 1000.0)
    rate = model_requests("llm", 100)
    run = _run(keeper, model_rate=rate)
    with pytest.raises(ModelThrottled), run.dependency():
        raise ModelThrottled("Too many requests, please wait before trying again.")
    assert keeper.allowed(rate) == 50


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_metas_throughput_error_holds_the_number_for_every_instance_for_its_window():
    # Given two consumer instances sending from the same number through the shared counters
    counters, clock = Counters(), Clock(1000.0)
    refused_here, elsewhere = RateKeeper(counters, clock), RateKeeper(counters, clock)
    run = _run(refused_here)
    run.send_room(REPLY_TO)
    # When Meta refuses one instance's send as over the number's throughput
    with pytest.raises(ms.SendRefused):
        run.meta.send(REPLY_TO, "hi", "cb", timeout=1.0)
    # (a refusal of another call already in flight says nothing new, and writes nothing)
    writes = counters.writes
    with pytest.raises(ms.SendRefused):
        run.meta.send(REPLY_TO, "hi", "cb", timeout=1.0)
    assert counters.writes == writes
    # Then the other instance's replies from that number are deferred for the number's window
    other = _run(elsewhere, meta=None)
    for moment in (1000.0, 1000.5, 1000.85):
        clock.now = moment
        with pytest.raises(DependencyBusy):
            other.send_room(REPLY_TO)
    # And once the window has passed it sends again
    clock.now = 1001.2
    other.send_room(REPLY_TO)


def test_a_pair_rate_refusal_slows_no_other_customers_reply():
    # Given two instances sending from one number, and Meta refusing one reply for its pair rate
    counters, clock = Counters(), Clock(1000.0)
    refused_here, elsewhere = RateKeeper(counters, clock), RateKeeper(counters, clock)
    run = _run(refused_here, meta=RateLimitedMeta(PAIR_RATE))
    run.send_room(REPLY_TO)
    with pytest.raises(ms.SendRefused) as refused:
        run.meta.send(REPLY_TO, "hi", "cb", timeout=1.0)
    # Then the number's other replies go on at its full rate, on either instance
    assert refused_here.allowed(whatsapp_number(REPLY_TO.business_id, 80)) == 80
    _run(elsewhere, meta=None).send_room(REPLY_TO)
    # And the refusal is a rate limit, retried no sooner than Meta's 6 s to one customer
    assert (refused.value.reason, refused.value.pace) == ("meta_rate_limited", ms.PAIR_PACE)
