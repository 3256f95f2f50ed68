"""Erasure end to end on the local runtime, through HTTP and the CLI only: Meta's data-deletion
callback and `lanectl erase` each leave nothing readable about the person, and nothing else gone."""

from __future__ import annotations

import json
import secrets
import time
import uuid

import pytest

from ops.drive import wait_for
from ops.drive.meta_payloads import whatsapp_message
from pipeline.adapters.sender_key import SenderKey
from pipeline.domain import stored_text
from pipeline.domain.erasure import signed_request
from pipeline.domain.webhook import body as webhook_body
from pipeline.tasks.messages import message_key

pytestmark = [pytest.mark.xdist_group("e2e"), pytest.mark.slow]

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _number() -> str:
    """A sender no other test uses (they share one runtime): 44 7700 9xxxxx."""
    return "4477009" + "".join(secrets.choice("0123456789") for _ in range(5))


def _deletion_callback(pipeline, user_id: str, secret: str):
    # Issued now: the callback refuses one older than max_request_age_seconds as a replay.
    payload = {"algorithm": "HMAC-SHA256", "user_id": user_id, "issued_at": int(time.time()), "expires": 0}
    body = f"signed_request={signed_request.sign(payload, secret)}".encode()
    return pipeline.client.request("POST", "/meta/data-deletion", body, FORM)


def _readable(item: dict) -> str:
    """An item as text, with a logged body unpacked (a body in parts would need them too; none of
    these deliveries is that large) and a stored text inflated."""
    if "body" in item and "part_of" not in item:
        encoding = item.get("body_encoding", {}).get("S")
        raw = webhook_body.unpack(encoding, [item["body"]["B"]])
        item = {**item, "body": {"S": raw.decode("utf-8", "replace")}}
    if "B" in item.get("text", {}):
        item = {**item, "text": {"S": stored_text.read(item["text"]["B"])}}
    return json.dumps(item, default=lambda value: value.decode("utf-8", "replace"))


def _tables_as_text(pipeline) -> str:
    dynamodb = pipeline.aws("dynamodb")
    texts = []
    for output in ("WebhookTableName", "JobsTableName", "StateTableName", "DataTableName"):
        kwargs = {"TableName": pipeline.outputs[output]}
        while True:
            page = dynamodb.scan(**kwargs)
            texts += [_readable(item) for item in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return "\n".join(texts)


def _stored(pipeline, tenant: str, wamid: str, sender: str) -> list[dict]:
    key = message_key(
        tenant, wamid, SenderKey(pipeline.aws("secretsmanager"), pipeline.outputs["SenderKeyArn"]).hash(sender)
    )
    found = pipeline.aws("dynamodb").get_item(
        TableName=pipeline.outputs["DataTableName"], Key={name: {"S": value} for name, value in key.items()}
    )
    return [found["Item"]] if "Item" in found else []


def _two_people_write(pipeline) -> tuple[str, str, str, str, str]:
    tenant = f"waba-{uuid.uuid4().hex[:8]}"
    person, other = _number(), _number()
    said, other_said = f"erase me {uuid.uuid4().hex}", f"keep me {uuid.uuid4().hex}"
    for sender, text, wamid in ((person, said, "wamid.p"), (other, other_said, "wamid.o")):
        assert pipeline.client.deliver(whatsapp_message(tenant, wamid, text, sender=sender)).status == 200
        wait_for(lambda w=wamid, p=sender: _stored(pipeline, tenant, w, p), timeout=30, what="the message to be stored")
    return tenant, person, other, said, other_said


def test_metas_data_deletion_callback_erases_the_person_and_only_them(pipeline):
    # Given two customers' messages stored
    tenant, person, other, said, other_said = _two_people_write(pipeline)
    assert person in _tables_as_text(pipeline)

    # When a callback not signed with the app secret arrives, then Meta's own
    forged = _deletion_callback(pipeline, person, "not-the-app-secret")
    response = _deletion_callback(pipeline, person, pipeline.client.app_secret)

    # Then the forgery is refused, and Meta is answered with the person's status page and code
    assert forged.status == 403
    assert response.status == 200
    answer = response.json()
    assert answer["url"] == f"{pipeline.api_url.rstrip('/')}/meta/data-deletion/{answer['confirmation_code']}"

    # And the status page, read as the person would, turns to done
    def done() -> bool:
        page = pipeline.client.request("GET", answer["url"].removeprefix(pipeline.api_url.rstrip("/")))
        return page.status == 200 and page.json()["status"] == "done"

    wait_for(done, timeout=60, what="the erasure to be done")
    # And nothing readable about the person is left, while the other customer's message is
    everything = _tables_as_text(pipeline)
    assert person not in everything
    assert said not in everything
    assert _stored(pipeline, tenant, "wamid.p", person) == []
    assert _stored(pipeline, tenant, "wamid.o", other)[0]["text"]["S"] == other_said


def test_lanectl_erase_prints_a_code_and_waits_for_the_erasure(pipeline):
    tenant, person, _, said, _ = _two_people_write(pipeline)

    # When on-call erases the person by their number, spelled the way they wrote it in an email
    result = pipeline.lanectl("--env", "local", "erase", "--sender", f"+44 7700 9{person[7:]}", "--wait", "60")

    # Then it prints a code and waits for done; the number is never printed, and nothing of it is left
    assert result.returncode == 0, result.stderr
    assert "erasure requested: confirmation code " in result.stdout
    assert "status: done" in result.stdout
    assert "\nerased: " in result.stdout
    assert person not in result.stdout + result.stderr
    assert _stored(pipeline, tenant, "wamid.p", person) == []
    everything = _tables_as_text(pipeline)
    assert person not in everything
    assert said not in everything
