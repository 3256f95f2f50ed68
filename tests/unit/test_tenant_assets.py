"""The tenants' Meta assets as typed config: ids by their real shape, one owner per asset, the
binding written only for the functions that read it, and the Graph URL built from a checked id."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.adapters.graph_api import GraphSender
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.reply_to import ReplyTo, ReplyToRefused
from pipeline.settings import EnvVar, SettingsError, asset_binding
from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from stacks import runtime_env
from stacks.config.environments import ENVIRONMENTS, LOCAL_ASSETS
from stacks.runtime_env import Resources


@pytest.mark.parametrize("bad", ["", "12a", "1" * 21, "999/subscribed_apps", "\uff11\uff12\uff13", " 123", "-1"])
def test_an_asset_id_that_is_not_digits_fails_naming_the_field(bad):
    with pytest.raises(ValueError, match="phones ids must be 1-20 digits"):
        TenantAssets(phones=(bad,))


def test_one_asset_bound_to_two_tenants_fails_naming_both():
    with pytest.raises(ValueError, match="Meta asset 42 is bound to two tenants: a and b"):
        AssetBinding({"a": TenantAssets(pages=("42",)), "b": TenantAssets(phones=("42",))})


def test_a_tenant_sends_only_from_its_own_assets_on_their_channels():
    binding = AssetBinding(
        {"a": TenantAssets(waba=("10",), phones=("11",), pages=("12",), instagram=("13",)), "b": TenantAssets()}
    )
    assert binding.may_send("a", ms.WHATSAPP, "11")
    assert not binding.may_send("a", ms.WHATSAPP, "10")  # a WhatsApp Business Account id sends nothing
    assert not binding.may_send("a", ms.WHATSAPP, "12")
    assert binding.may_send("a", ms.MESSENGER, "12")
    assert not binding.may_send("a", ms.MESSENGER, "13")
    assert binding.may_send("a", ms.INSTAGRAM, "12")
    assert binding.may_send("a", ms.INSTAGRAM, "13")
    assert not binding.may_send("b", ms.WHATSAPP, "11")
    assert not binding.may_send("c", ms.WHATSAPP, "11")
    assert (binding.owner_of("13"), binding.owner_of("14")) == ("a", None)


def test_the_binding_reads_back_as_written_compactly():
    text = LOCAL_ASSETS.to_text()
    assert text == "shop-1=w1000001,p1098765,f1077,i1078 acme=w2000001,p2098765,f2077"
    assert AssetBinding.from_text(text) == LOCAL_ASSETS
    assert AssetBinding.from_text("") == AssetBinding()
    assert AssetBinding.from_text("idle=") == AssetBinding({"idle": TenantAssets()})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shop-1=p1098765/x", "phones ids must be 1-20 digits"),
        ("shop-1=x1098765", "'x1098765' does not start with one of w, p, f, i"),
        ("shop-1", "is not one tenant's"),
        ("a=p1 a=p2", "or names it twice"),
        ("a=p1 b=f1", "Meta asset 1 is bound to two tenants: a and b"),
    ],
)
def test_a_binding_that_cannot_be_read_fails_the_cold_start_naming_what(text, message):
    with pytest.raises(SettingsError, match=message):
        asset_binding({EnvVar.TENANT_ASSETS: text})


@pytest.mark.parametrize(
    ("name", "holders"),
    [
        # local's shop-1 has auto-reply on: the messages lane finds a delivery's tenant in the binding
        ("local", {"jobs", "consumer-ai", "consumer-messages"}),
        ("prod", {"jobs", "consumer-ai"}),
    ],
)
def test_only_the_jobs_api_the_sending_lanes_and_an_auto_replying_lane_are_given_the_binding(name, holders):
    env = ENVIRONMENTS[name]
    resources = Resources(
        webhook_table="w",
        jobs_table="j",
        state_table="s",
        data_table="d",
        queue_urls={lane.name: f"q-{lane.name}" for lane in env.lanes},
        dlq_urls={lane.name: f"dlq-{lane.name}" for lane in env.lanes},
        secret_arn="arn:s",
        sender_key_arn="arn:k",
        access_token_arn="arn:t",
    )
    given = {
        f"consumer-{lane.name}": EnvVar.TENANT_ASSETS in runtime_env.consumer(env, lane, resources, json.dumps)
        for lane in env.lanes
    }
    given["jobs"] = EnvVar.TENANT_ASSETS in runtime_env.jobs(env, resources, json.dumps)
    given["ingress"] = EnvVar.TENANT_ASSETS in runtime_env.ingress(env, resources, json.dumps)
    given["sweeper"] = EnvVar.TENANT_ASSETS in runtime_env.sweeper(env, resources, json.dumps)
    assert {function for function, has in given.items() if has} == holders
    assert asset_binding(runtime_env.jobs(env, resources, json.dumps)) == env.tenant_assets


class _Recorded(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_POST(self) -> None:
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"messages": [{"id": "wamid.1"}]}')

    def log_message(self, *_: object) -> None:
        return


class _Token:
    def __init__(self) -> None:
        self.reads = 0

    def get(self) -> str:
        self.reads += 1
        return "token"

    def forget(self) -> None:
        return


@pytest.fixture
def recorder():
    _Recorded.paths = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v21.0", _Recorded.paths
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("business", ["999/subscribed_apps?subscribed_fields=feed&x=", "..", "12%2F3", ""])
def test_the_sender_refuses_an_id_that_is_not_digits_before_any_request(recorder, business):
    # Given a ReplyTo built without parse (as no caller should), naming a path of its own
    url, paths = recorder
    token = _Token()
    sender = GraphSender(url, token)  # type: ignore[arg-type]
    # When it is sent, then it is refused for good, before the token is read or a request made
    with pytest.raises(ReplyToRefused) as refused:
        sender.send(ms.ReplyTo(ms.WHATSAPP, business, "15551230001"), "hi", "cb", timeout=2.0)
    assert refused.value.reason == "reply_to_malformed"
    assert (paths, token.reads) == ([], 0)


def test_a_digit_id_is_sent_to_its_own_messages_edge(recorder):
    url, paths = recorder
    sent = GraphSender(url, _Token()).send(  # type: ignore[arg-type]
        ms.ReplyTo(ms.WHATSAPP, "1098765", "+1 (555) 123-0001"), "hi", "cb", timeout=2.0
    )
    assert (sent.message_id, paths) == ("wamid.1", ["/v21.0/1098765/messages"])


def test_a_reply_to_reads_ids_written_as_json_numbers_as_their_digits():
    parsed = ReplyTo.parse({"channel": "whatsapp", "business_id": 1098765, "recipient": 15551230001})
    assert parsed == ReplyTo("whatsapp", "1098765", "15551230001")
    with pytest.raises(ReplyToRefused, match="needs business_id and recipient, as strings or numbers"):
        ReplyTo.parse({"channel": "whatsapp", "business_id": True, "recipient": "15551230001"})
