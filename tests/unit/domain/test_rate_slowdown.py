"""A dependency's refusal as over its rate slows the key down for the instance that saw it: Meta's
429 (130429) for the sending number, Bedrock's ThrottlingException for the model."""

from __future__ import annotations

import pytest

from pipeline.domain.consumer.task_context import TaskRun
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.dependencies.model import ModelThrottled
from pipeline.domain.dependencies.rates import RateKeeper, model_requests, whatsapp_number
from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from tests.unit.domain.test_rates import Counters
from tests.unit.tasks.payloads import envelope

REPLY_TO = ms.ReplyTo(ms.WHATSAPP, "1098765", "15551230001")


class RateLimitedMeta:
    def send(self, reply_to: ms.ReplyTo, text: str, callback: str, *, timeout: float) -> ms.Sent:
        raise ms.SendRefused(130429, "(#130429) Rate limit hit", slow=True)


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
