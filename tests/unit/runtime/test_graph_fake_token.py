"""The local Graph API's `GET /{version}/me`, the lane probe's check of Meta's access token: the
token's user for the stored token, Meta's 190 OAuthException body for any other or while revoked;
and the probe's check reads it as Meta's answer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from local_aws.graph_fake import SYSTEM_USER_ID, GraphFake
from pipeline.adapters.dependency_checks import MetaTokenCheck

TOKEN = "token-1"


@pytest.fixture
def graph():
    fake = GraphFake(token=TOKEN)
    fake.start()
    yield fake
    fake.stop()


def _get(graph: GraphFake, token: str, path: str = "/me?fields=id") -> tuple[int, dict]:
    request = urllib.request.Request(graph.url + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class Secret:
    def __init__(self, token: str) -> None:
        self.token = token

    def get_secret_value(self, SecretId: str) -> dict:
        return {"SecretString": json.dumps({"access_token": self.token})}


def test_the_stored_token_gets_its_user(graph):
    assert _get(graph, TOKEN) == (200, {"id": SYSTEM_USER_ID})
    assert graph.token_checks == 1


@pytest.mark.parametrize("revoked", [False, True])
def test_another_token_or_a_revoked_one_gets_metas_190_body(graph, revoked):
    graph.configure(revoked=revoked)
    status, body = _get(graph, TOKEN if revoked else "someone-elses")
    error = body["error"]
    assert status == 401
    assert (error["code"], error["type"], error["error_subcode"]) == (190, "OAuthException", 460)
    assert error["message"].startswith("Error validating access token")
    assert error["fbtrace_id"]


def test_another_path_is_not_served(graph):
    status, body = _get(graph, TOKEN, "/1098765/phone_numbers")
    assert (status, body["error"]["code"]) == (400, 100)


def test_the_probes_check_reads_the_token_from_its_secret_and_metas_answer(graph):
    check = MetaTokenCheck(graph.url, Secret(TOKEN), "arn:token")
    assert check.check() is None
    graph.configure(revoked=True)
    assert check.check() == "meta_token_invalid"
    assert MetaTokenCheck(graph.url, Secret(""), "arn:token").check() == "meta_token_unavailable"


def test_the_probes_check_of_a_meta_it_cannot_reach_is_unreachable():
    assert MetaTokenCheck("http://127.0.0.1:9/v21.0", Secret(TOKEN), "arn:token").check() == "meta_unreachable"
