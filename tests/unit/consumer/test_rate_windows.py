"""The rate budgets' slice counters in the state table, against moto: a key held after the
dependency said it is over its rate (`fill`) refuses every taker for the slices held."""

from __future__ import annotations

import boto3

from pipeline import schema
from pipeline.adapters.rate_windows import ITEM_TTL_SLACK_SECONDS, SliceCounters
from pipeline.domain.dependencies.rates import held_slices, whatsapp_number
from tests.support.aws import REGION


def test_held_slices_refuse_every_taker_and_expire_on_their_own(aws, deployed):
    # Given a number's slices, one of them with a call counted already
    counters = SliceCounters(boto3.client("dynamodb", region_name=REGION), "state")
    rate = whatsapp_number("1098765", 80)
    held = held_slices(rate, 1_800_000_000.05, rate.window_seconds)
    assert counters.add_one(held[0].key, rate.per_slice(), held[0].ends_at) == 1
    # When the number is held for its window
    counters.fill([s.key for s in held], rate.limit, held[-1].ends_at)
    # Then every slice of that second refuses a call, whatever share a taker asks for
    assert len(held) in (9, 10)
    assert [counters.add_one(s.key, rate.per_slice(), s.ends_at) for s in held] == [None] * len(held)
    # And each is left to the table's TTL
    item = boto3.resource("dynamodb", region_name=REGION).Table("state").get_item(Key={schema.PK: held[0].key})
    assert item["Item"][schema.TTL] == int(held[-1].ends_at) + ITEM_TTL_SLACK_SECONDS
