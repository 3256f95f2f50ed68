"""The local Graph API's subscribed_apps endpoints answer in Meta's shapes and with Meta's error
bodies, so `lanectl meta check` runs its real client against them (ops/meta_graph.py)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from local_aws.graph_fake import APP_ID, GraphFake
from ops.meta_graph import Graph, GraphRefused, GraphUnavailable

TOKEN = "token-1"


@pytest.fixture
def graph():
    fake = GraphFake(token=TOKEN)
    fake.start()
    yield fake
    fake.stop()


def _post(graph: GraphFake, path: str, token: str = TOKEN) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{graph.url}/{path}", data=b"", method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_page_lists_the_app_with_its_fields_and_a_whatsapp_account_the_app_alone(graph):
    graph.add_account("11", "page", ("feed", "messages"))
    graph.add_account("22", "whatsapp")
    client = Graph(graph.url, TOKEN)

    assert client.subscribed_apps("11") == [
        {
            "category": "Business",
            "link": f"https://www.facebook.com/games/?app_id={APP_ID}",
            "name": "Lanes (local)",
            "id": APP_ID,
            "subscribed_fields": ["feed", "messages"],
        }
    ]
    assert client.subscribed_apps("22") == [
        {
            "whatsapp_business_api_data": {
                "link": f"https://www.facebook.com/games/?app_id={APP_ID}",
                "name": "Lanes (local)",
                "id": APP_ID,
            }
        }
    ]


def test_an_account_the_app_is_not_subscribed_to_lists_no_app(graph):
    graph.add_account("33", "page", subscribed=False)

    assert Graph(graph.url, TOKEN).subscribed_apps("33") == []


def test_re_subscribing_a_page_sets_its_fields_and_a_page_needs_fields(graph):
    # Given a Page the app lost
    graph.add_account("44", "page", subscribed=False)
    # When it is subscribed without fields, then with them
    refused = _post(graph, "44/subscribed_apps")
    accepted = _post(graph, "44/subscribed_apps?subscribed_fields=feed,messages,message_echoes")
    # Then Meta's 100 first, then success and the fields listed
    assert refused[0] == 400
    assert refused[1]["error"]["code"] == 100
    assert accepted == (200, {"success": True})
    assert Graph(graph.url, TOKEN).subscribed_apps("44")[0]["subscribed_fields"] == [
        "feed",
        "messages",
        "message_echoes",
    ]


def test_an_unknown_id_is_metas_100_subcode_33(graph):
    with pytest.raises(GraphRefused) as refused:
        Graph(graph.url, TOKEN).subscribed_apps("55")

    assert (refused.value.status, refused.value.code, refused.value.subcode) == (400, 100, 33)
    assert refused.value.message.startswith("Unsupported get request. Object with ID '55' does not exist")


def test_another_token_is_metas_190(graph):
    graph.add_account("66", "page", ("feed",))

    with pytest.raises(GraphRefused) as refused:
        Graph(graph.url, "not-the-token").subscribed_apps("66")

    assert (refused.value.status, refused.value.code) == (401, 190)


def test_meta_down_is_unavailable_not_a_refusal(graph):
    graph.add_account("77", "page", ("feed",))
    graph.configure(down=True)

    with pytest.raises(GraphUnavailable, match="Meta answered 503"):
        Graph(graph.url, TOKEN).subscribed_apps("77")
