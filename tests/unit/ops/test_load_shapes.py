"""`lanectl load --shape`: each shape sends who it says to whom, on the product it says, and every
delivery is one the door routes to the messages lane and the consumer reads as it is meant to."""

from __future__ import annotations

import json
from itertools import islice, pairwise

import pytest

from ops.load.shapes import MESSAGE, SHAPES, STATUS, deliveries
from pipeline.domain.webhook.routing import route
from pipeline.tasks import meta

BUSINESSES = 30


def _take(shape: str, count: int = 90) -> list:
    return list(islice(deliveries(shape, BUSINESSES, 1500), count))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_delivery_of_every_shape_is_routed_and_read_as_the_item_it_names(shape):
    # Given a shape's deliveries
    made = _take(shape)
    # When the door routes each and the messages lane reads it
    for delivery in made:
        payload = json.loads(delivery.body)
        where = route(payload)
        units = meta.read(payload)
        # Then it goes to the messages lane of its business, and holds exactly the item it names,
        # about the person it names
        assert (where.lane, where.tenant) == ("messages", delivery.tenant)
        if delivery.item == MESSAGE:
            assert [(m.id, m.person) for m in units.messages] == [(delivery.message_id, delivery.sender)]
            assert units.statuses == []
        else:
            assert [(s.message_id, s.recipient) for s in units.statuses] == [(delivery.message_id, delivery.sender)]
            assert units.messages == []
    assert len({d.body for d in made}) == len(made)


def test_one_to_many_is_one_customer_writing_to_every_business():
    made = _take("one-to-many")
    assert len({d.sender for d in made}) == 1
    assert len({d.tenant for d in made}) == BUSINESSES


def test_long_history_is_one_customer_and_one_business():
    made = _take("long-history")
    assert len({(d.sender, d.tenant) for d in made}) == 1
    assert len({d.message_id for d in made}) == len(made)


def test_new_customers_never_repeat_a_customer_even_across_runs():
    first, second = _take("new-customers"), _take("new-customers")
    assert len({d.sender for d in first + second}) == len(first) + len(second)


def test_texts_come_from_many_customers_round_robin_over_the_businesses():
    made = _take("texts")
    assert len({d.tenant for d in made}) == BUSINESSES
    assert len({d.sender for d in made}) == len(made)


def test_each_earlier_reply_gets_sent_then_delivered_then_read_to_the_same_customer():
    # Given the statuses shape
    made = _take("statuses", 60)
    # When its deliveries are grouped by reply
    steps: dict[str, list[tuple[str, str, str]]] = {}
    for delivery in made:
        assert delivery.item == STATUS
        (update,) = meta.read(json.loads(delivery.body)).statuses
        steps.setdefault(delivery.message_id, []).append((update.status, delivery.sender, delivery.tenant))
    # Then every reply whose statuses all went out had the three, in order, about one customer
    complete = [s for s in steps.values() if len(s) == 3]
    assert len(complete) >= 15
    for reply in complete:
        assert [status for status, _, _ in reply] == ["sent", "delivered", "read"]
        assert len({(sender, tenant) for _, sender, tenant in reply}) == 1


def test_products_mix_whatsapp_messenger_and_instagram_in_turn():
    made = _take("products", 9)
    objects = [json.loads(d.body)["object"] for d in made]
    assert objects == ["whatsapp_business_account", "page", "instagram"] * 3
    channels = [meta.read(json.loads(d.body)).messages[0].channel for d in made[1:3]]
    assert channels == ["messenger", "instagram"]


def test_auto_reply_is_bursts_of_three_to_the_auto_replying_tenants_bound_number():
    from ops.load.shapes import BURST_CUSTOMERS, BURST_TEXTS
    from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP

    # Given two groups' worth of the auto-reply shape
    made = _take("auto-reply", 2 * BURST_CUSTOMERS * BURST_TEXTS)
    shop = LOCAL_ASSETS.tenants[LOCAL_SHOP]
    # Then every text goes to the auto-replying tenant's bound number
    for delivery in made:
        value = json.loads(delivery.body)["entry"][0]["changes"][0]["value"]
        assert (delivery.tenant, value["metadata"]["phone_number_id"]) == (shop.waba[0], shop.phones[0])
    # And each customer sends one burst, their texts interleaved with the others' of the group
    by_customer: dict[str, list[int]] = {}
    for index, delivery in enumerate(made):
        by_customer.setdefault(delivery.sender, []).append(index)
    assert len(by_customer) == 2 * BURST_CUSTOMERS
    for indices in by_customer.values():
        assert [b - a for a, b in pairwise(indices)] == [BURST_CUSTOMERS] * (BURST_TEXTS - 1)


@pytest.mark.parametrize("shape", sorted(set(SHAPES) - {"statuses"}))
def test_messages_are_about_the_asked_size(shape):
    for delivery in _take(shape, 10):
        assert abs(len(delivery.body) - 1500) <= 16
