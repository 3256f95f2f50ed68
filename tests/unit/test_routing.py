"""Lane, tenant and kind of a Meta delivery, as properties over arbitrary payloads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.domain import routing, tenant_ids
from pipeline.domain.routing import ENGAGEMENT_LANE, MESSAGES_LANE, WEBHOOK_LANES

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
