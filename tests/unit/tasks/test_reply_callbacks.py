"""A status moves a reply only through a reference our key signed, from the number it names:
a forged or replayed `biz_opaque_callback_data` is stored as any status is and moves nothing."""

from __future__ import annotations

import base64
import json

import boto3
import pytest

from pipeline import metric_names
from pipeline.adapters.callback_key import ReplyCallbacks
from pipeline.domain.dependencies import meta_send as ms
from pipeline.domain.dependencies.callback_keys import CallbackKeyUnavailable
from tests.support.aws import REGION, REPLY_CALLBACK_KEY
from tests.unit.consumer.handler_output import log_lines, metric_total, stdout_records
from tests.unit.tasks.reply_statuses import (
    OTHER_PHONE_ID,
    OTHER_SHOP,
    PHONE_ID,
    WABA,
    put_reply,
    ref,
    reply,
    status_delivery,
)

KEY = REPLY_CALLBACK_KEY.encode()


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def _deliver(messages, delivery) -> dict:
    messages.send(messages.webhook_row(delivery, tenant=WABA))
    messages.poll(messages.handler())


def _detail(caplog) -> dict:
    [line] = [line for line in log_lines(caplog) if line.get("outcome") == "done" and line.get("lane") == "messages"]
    return line["detail"]


def _forged() -> dict[str, str]:
    genuine = ms.callback(ref(), KEY)
    mac = genuine.rsplit(".", 1)[1]
    return {
        # The attack: the unsigned reference this code used to accept
        "unsigned": "lanes1:" + _b64([OTHER_SHOP, "conv-1", "m1", 1]),
        "made-up MAC": f"{ms.CALLBACK_PREFIX}{_b64([OTHER_SHOP, 'conv-1', 'm1', 1, PHONE_ID])}.{mac}",
        "no MAC": f"{ms.CALLBACK_PREFIX}{_b64([OTHER_SHOP, 'conv-1', 'm1', 1, PHONE_ID])}",
        "another key": ms.callback(ref(OTHER_SHOP), b"an-attackers-key-0123456789abcdefghij"),
    }


@pytest.mark.parametrize("forgery", ["unsigned", "made-up MAC", "no MAC", "another key"])
@pytest.mark.parametrize("status", ["sent", "failed"])
def test_a_forged_reference_naming_another_tenants_reply_moves_nothing(lane, caplog, capsys, forgery, status):
    # Given shop-2's reply whose send's outcome is unknown, and another whose send Meta took
    messages = lane("messages")
    waiting = put_reply(messages, ms.UNKNOWN, tenant=OTHER_SHOP)
    sent = put_reply(messages, ms.SENT, tenant=OTHER_SHOP, token="m2", message_id="wamid.real")
    # When a real-shaped status arrives through shop-1's number carrying a reference to it
    callback = _forged()[forgery]
    _deliver(messages, status_delivery(callback, status=status, errors=[{"code": 131026}]))
    # Then neither reply moved, the status was stored as any status is, and the refusal is counted
    assert reply(messages, waiting)["send_state"] == ms.UNKNOWN
    assert reply(messages, sent)["send_state"] == ms.SENT
    detail = _detail(caplog)
    assert (detail["statuses"], detail.get("replies_resolved"), detail.get("replies_failed")) == (1, None, None)
    expected = 0 if forgery == "unsigned" else 1  # the old prefix is no reference of ours at all
    assert detail.get("callbacks_refused", 0) == expected
    printed = stdout_records(capsys.readouterr().out)
    assert metric_total(printed, metric_names.REPLY_CALLBACKS_REFUSED, Lane="messages") == expected
    assert callback not in caplog.text


def test_a_genuine_reference_from_its_own_number_resolves_the_reply(lane, caplog):
    messages = lane("messages")
    key = put_reply(messages, ms.UNKNOWN)
    _deliver(messages, status_delivery(ms.callback(ref(), KEY)))
    stored = reply(messages, key)
    assert (stored["send_state"], stored["message_id"], stored["resolved_by"]) == (
        ms.SENT,
        "wamid.HBgLMTU1NTEyMzAwMDEVAgARGBI",
        "status",
    )
    assert stored["status_sent"] == 1733270000
    assert _detail(caplog)["replies_resolved"] == 1


def test_a_genuine_reference_replayed_through_another_number_moves_nothing(lane, caplog):
    # Given shop-1's reply sent from its number, whose outcome is unknown
    messages = lane("messages")
    key = put_reply(messages, ms.UNKNOWN)
    genuine = ms.callback(ref(), KEY)
    # When its genuine reference comes back in a status from another business's number
    _deliver(messages, status_delivery(genuine, phone_id=OTHER_PHONE_ID))
    # Then the reply still waits, and the reference was refused
    assert reply(messages, key)["send_state"] == ms.UNKNOWN
    assert _detail(caplog)["callbacks_refused"] == 1


@pytest.fixture
def key_secret(aws):
    client = boto3.client("secretsmanager", region_name=REGION)
    arn = client.create_secret(Name="callbacks", SecretString=json.dumps({"callback_key": "a" * 40}))["ARN"]
    return client, arn


def test_after_a_rotation_both_keys_verify_until_the_previous_one_expires(key_secret):
    client, arn = key_secret
    now = [1_000.0]
    signer = ReplyCallbacks(client, arn, lambda: now[0], cache_seconds=0)
    before = signer.sign(ref())
    # When the key is rotated, the old one kept as previous for an hour
    client.put_secret_value(
        SecretId=arn,
        SecretString=json.dumps(
            {"callback_key": "b" * 40, "previous_callback_key": "a" * 40, "previous_expires_at": 1_000.0 + 3600}
        ),
    )
    after = signer.sign(ref())
    # Then new references are signed with the new key, and both verify
    assert after != before
    assert ms.read_callback(after, [b"b" * 40]) == ref()
    assert signer.verify(before) == ref()
    assert signer.verify(after) == ref()
    # And once the previous key's time is up, only the new key's do
    now[0] += 3601
    assert signer.verify(before) is None
    assert signer.verify(after) == ref()


def test_a_verifier_holding_the_old_key_reads_again_for_a_reference_signed_with_the_new_one(key_secret):
    client, arn = key_secret
    now = [1_000.0]
    verifier = ReplyCallbacks(client, arn, lambda: now[0], cache_seconds=60, refresh_seconds=10)
    assert verifier.verify(ms.callback(ref(), b"a" * 40)) == ref()  # reads and keeps the key
    client.put_secret_value(
        SecretId=arn,
        SecretString=json.dumps(
            {"callback_key": "b" * 40, "previous_callback_key": "a" * 40, "previous_expires_at": 1_000.0 + 3600}
        ),
    )
    fresh = ms.callback(ref(), b"b" * 40)
    now[0] += 11  # within the cache, past the refresh interval
    assert verifier.verify(fresh) == ref()


def test_a_previous_key_without_an_expiry_is_refused_as_a_misconfiguration(key_secret):
    client, arn = key_secret
    client.put_secret_value(
        SecretId=arn, SecretString=json.dumps({"callback_key": "b" * 40, "previous_callback_key": "a" * 40})
    )
    with pytest.raises(CallbackKeyUnavailable, match="previous_expires_at"):
        ReplyCallbacks(client, arn, lambda: 1_000.0).sign(ref())
