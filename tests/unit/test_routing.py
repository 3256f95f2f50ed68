"""Lane, tenant and kind of a Meta delivery, as properties over arbitrary payloads."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain.webhook import routing
from pipeline.domain.webhook.routing import ENGAGEMENT_LANE, MESSAGES_LANE, WEBHOOK_LANES
from pipeline.settings import tenant_ids
from tests.support import meta_deliveries

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=25,
)
comment_fields = st.sampled_from(sorted(routing.COMMENT_FIELDS))
other_fields = st.text(max_size=12).filter(lambda f: f not in routing.COMMENT_FIELDS)


def _delivery(fields_per_entry: list[list[str]], messaging: bool = False, obj: str = "page") -> dict:
    entries = []
    for index, fields in enumerate(fields_per_entry):
        entry: dict = {"id": f"10{index}", "changes": [{"field": f, "value": {}} for f in fields]}
        if messaging:
            entry["messaging"] = [{"message": {"text": "hi"}}]
        entries.append(entry)
    return {"object": obj, "entry": entries}


@given(payload=json_values)
def test_any_payload_routes_to_a_webhook_lane_with_a_usable_tenant(payload):
    route = routing.route(payload)

    assert route.lane in WEBHOOK_LANES
    assert tenant_ids.is_valid(route.tenant)
    assert route.kind.count(".") == 1


@given(fields=st.lists(st.lists(comment_fields, min_size=1, max_size=3), min_size=1, max_size=3))
def test_deliveries_of_only_comment_and_feed_changes_go_to_engagement(fields):
    assert routing.lane_for(_delivery(fields)) == ENGAGEMENT_LANE


@given(
    comments=st.lists(comment_fields, max_size=3),
    others=st.lists(other_fields, min_size=1, max_size=3),
    order=st.randoms(),
)
def test_a_delivery_with_anything_but_comments_goes_to_messages(comments, others, order):
    fields = comments + others
    order.shuffle(fields)

    assert routing.lane_for(_delivery([fields])) == MESSAGES_LANE


@given(fields=st.lists(comment_fields, min_size=1, max_size=3))
def test_direct_messages_never_wait_behind_comments(fields):
    assert routing.lane_for(_delivery([fields], messaging=True)) == MESSAGES_LANE


def test_whatsapp_messages_and_statuses_go_to_messages():
    payload = {"object": "whatsapp_business_account", "entry": [{"id": "555", "changes": [{"field": "messages"}]}]}

    assert routing.route(payload) == routing.Route(MESSAGES_LANE, "555", "whatsapp.messages")


def test_kinds_name_the_product_and_the_field():
    assert routing.kind_for(_delivery([["feed"]])) == "page.feed"
    assert routing.kind_for(_delivery([["comments"]], obj="instagram")) == "instagram.comments"
    assert routing.kind_for(_delivery([[]], messaging=True)) == "page.messaging"
    assert routing.kind_for(_delivery([["feed", "mentions"]])) == "page.mixed"
    assert routing.kind_for({"object": "Something Else!"}) == "something_else.unknown"
    assert routing.kind_for("nonsense") == "unknown.unknown"


def test_the_tenant_is_the_first_entry_id_and_numeric_ids_are_kept():
    assert routing.tenant_for({"entry": [{"id": 12345}, {"id": "999"}]}) == "12345"
    assert routing.tenant_for({"entry": [{"time": 1}, {"id": "999"}]}) == "999"


def test_ids_that_could_not_be_a_message_group_are_unknown():
    for bad in ("has space", "a#b", "x" * 129, "naïve", True):
        assert routing.tenant_for({"entry": [{"id": bad}]}) == routing.UNKNOWN_TENANT


# Meta-shaped deliveries: the route of each is known from what was drawn.


@given(delivery=meta_deliveries.deliveries)
def test_every_meta_shaped_delivery_gets_the_route_its_contents_call_for(delivery):
    assert routing.route(delivery.payload) == delivery.route


@given(delivery=meta_deliveries.deliveries, junk=meta_deliveries.not_an_object, data=st.data())
def test_a_change_that_is_not_an_object_sends_the_delivery_to_messages(delivery, junk, data):
    # Given a Meta delivery with one change replaced by something that is not an object
    payload = copy.deepcopy(delivery.payload)
    entry = data.draw(st.sampled_from(payload["entry"]))
    entry.setdefault("changes", []).append(junk)

    route = routing.route(payload)

    # Then the unrecognised unit of work keeps it off the engagement lane, and the rest stands
    product = delivery.route.kind.split(".")[0]
    assert route == routing.Route(MESSAGES_LANE, delivery.route.tenant, f"{product}.mixed")


@given(delivery=meta_deliveries.deliveries, field=meta_deliveries.not_a_field, data=st.data())
def test_a_change_whose_field_is_not_a_name_sends_the_delivery_to_messages(delivery, field, data):
    payload = copy.deepcopy(delivery.payload)
    entry = data.draw(st.sampled_from(payload["entry"]))
    entry.setdefault("changes", []).append({"field": field, "value": {}})

    route = routing.route(payload)

    product = delivery.route.kind.split(".")[0]
    assert route == routing.Route(MESSAGES_LANE, delivery.route.tenant, f"{product}.mixed")


@given(delivery=meta_deliveries.deliveries, junk=st.lists(meta_deliveries.not_an_object, min_size=1, max_size=3))
def test_entries_that_are_not_objects_are_passed_over(delivery, junk):
    payload = {**delivery.payload, "entry": [*junk, *delivery.payload["entry"], *junk]}

    assert routing.route(payload) == delivery.route


def test_changes_whose_fields_are_all_unreadable_are_one_unknown_kind():
    # Given two changes whose fields are a number and a list: neither names anything
    payload = {"object": "page", "entry": [{"id": "1", "changes": [{"field": 5}, {"field": [6]}, "x"]}]}

    # Then the kind is unknown, not mixed: unreadable is one kind, whatever the junk
    assert routing.route(payload) == routing.Route(MESSAGES_LANE, "1", "page.unknown")


def test_an_object_that_is_not_a_name_is_an_unknown_product():
    for obj in ([], {"a": 1}, 7, None):
        assert routing.kind_for({"object": obj, "entry": [{"id": "1", "changes": [{"field": "feed"}]}]}) == (
            "unknown.feed"
        )


def test_an_entry_with_an_empty_id_passes_the_tenant_to_the_next():
    assert routing.tenant_for({"entry": [{"id": ""}, {"id": "999"}]}) == "999"
    assert routing.tenant_for({"entry": [{"id": ""}]}) == routing.UNKNOWN_TENANT
