"""`lanectl trace`: one delivery's or job's path from its id, read from what the pipeline wrote
(no scan), with who it is about and their text shown only when asked; bad ids refused with what
an id looks like, and nothing written either way."""

from __future__ import annotations

import json

import pytest

from pipeline.adapters.items import from_item
from pipeline.domain.webhook import delivery as webhook
from tests.unit.ingress.conftest import encode
from tests.unit.tasks.payloads import comment_change, feed, status, text_message, whatsapp

ANA = "15550001"


def _snapshot(pipeline, stack) -> list:
    return [sorted(repr(sorted(i.items())) for i in pipeline.items(stack[t])) for t in sorted(stack) if "Table" in t]


def test_a_processed_delivery_shows_its_path_and_each_units_effect_and_nobody_personal(pipeline, stack, lanectl):
    # Given Ana's message and a status of an unknown message, delivered and processed
    payload = whatsapp(
        messages=[text_message("wamid.1", "where is my parcel", sender=ANA)], statuses=[status("wamid.0", "read")]
    )
    pipeline.deliver(payload)
    pipeline.drain()
    row_id = webhook.log_id(encode(payload))
    before = _snapshot(pipeline, stack)

    # When on-call traces the delivery by its log id
    code, out, _ = lanectl("trace", row_id, "--env", "dev")

    # Then it says when the door took it, its lane, that it was processed, and each unit's effect
    assert code == 0, out
    assert out.startswith(f"webhook {row_id}\n")
    assert "by the door" in out
    assert "  lane         messages (tenant " in out
    assert "  status       processed: 2 of 2 unit(s) stored" in out
    assert "  message      wamid.1 from (personal: --show-personal): stored {'stored_at':" in out
    assert "reads: DataTableName 2, WebhookTableName 2, secretsmanager 1 (consistent GetItems; no scan)" in out
    # and nothing about Ana: neither her number nor her words
    assert ANA not in out
    assert "parcel" not in out
    # and the trace wrote nothing
    assert _snapshot(pipeline, stack) == before


def test_with_show_personal_who_and_what_are_shown_and_json_is_one_document(pipeline, stack, lanectl):
    payload = whatsapp(messages=[text_message("wamid.2", "is the shop open", sender=ANA)])
    pipeline.deliver(payload)
    pipeline.drain()

    code, out, _ = lanectl(
        "trace", webhook.log_id(encode(payload)), "--env", "dev", "--show-personal", "--output", "json"
    )

    assert code == 0
    traced = json.loads(out)
    assert traced["source"] == "webhook"
    [unit] = traced["units"]
    assert (unit["kind"], unit["id"], unit["person"]) == ("message", "wamid.2", ANA)
    assert unit["stored"]["text"] == "is the shop open"
    assert {step["step"] for step in traced["path"]} >= {"taken", "lane", "status", "kept until"}


def test_a_delivery_not_processed_yet_says_so(pipeline, stack, lanectl):
    payload = whatsapp(messages=[text_message("wamid.3", "hello", sender=ANA)])
    pipeline.deliver(payload)  # not drained: still on its lane

    code, out, _ = lanectl("trace", webhook.log_id(encode(payload)), "--env", "dev")

    assert code == 0
    assert "  status       queued: not processed yet, or its units stored nothing" in out
    assert "  message      wamid.3 from (personal: --show-personal): nothing stored" in out


def test_a_job_shows_its_path(pipeline, stack, lanectl):
    answer = pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": {"page": 1}})
    job_id = json.loads(answer["body"])["id"]

    code, out, _ = lanectl("trace", job_id, "--env", "dev")

    assert code == 0, out
    assert out.startswith(f"job {job_id}\n")
    assert "by the jobs API" in out
    assert "  lane         bulk (tenant acme, kind import.page)" in out
    assert "reads: JobsTableName 1" in out


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("wamid.", "is neither a webhook log id (wh-<64 hex>"),
        ("12_ab", "nor Meta's id of a message (wamid.…, m_…) or a comment"),
        ("wh-123", "is neither a webhook log id"),
        ("job-XYZ", "is neither a webhook log id"),
        ("", "is neither a webhook log id"),
    ],
)
def test_an_id_of_no_known_shape_is_refused_with_what_an_id_looks_like(pipeline, stack, lanectl, given, says):
    code, out, err = lanectl("trace", given, "--env", "dev")

    assert code == 2
    assert says in err
    assert out == ""


@pytest.mark.parametrize("unknown", ["wh-" + "0" * 64, "job-" + "0" * 32])
def test_an_id_nobody_wrote_is_refused_and_nothing_is_written(pipeline, stack, lanectl, unknown):
    before = _snapshot(pipeline, stack)

    code, _, err = lanectl("trace", unknown, "--env", "dev")

    assert code == 2
    assert f"{unknown} in the " in err
    assert "never taken, or past its retention" in err
    assert _snapshot(pipeline, stack) == before


def test_a_dead_lettered_delivery_says_where_it_went_and_why(pipeline, stack, lanectl):
    # Given a delivery no task can read (its entries are not a list): dead-lettered as permanent
    payload = {"object": "whatsapp_business_account", "entry": "not a list"}
    pipeline.deliver(payload)
    pipeline.drain()

    code, out, _ = lanectl("trace", webhook.log_id(encode(payload)), "--env", "dev")

    assert code == 0, out
    assert "  last error   not_a_delivery (PermanentError)" in out
    assert "  status       dead-lettered: its message is in the lane's DLQ (lanectl dlq peek LANE)" in out


def test_a_whatsapp_message_id_leads_to_the_delivery_that_stored_it(pipeline, stack, lanectl):
    payload = whatsapp(messages=[text_message("wamid.HBgL1", "where is my parcel", sender=ANA)])
    pipeline.deliver(payload)
    pipeline.drain()
    row_id = webhook.log_id(encode(payload))

    code, out, _ = lanectl("trace", "wamid.HBgL1", "--env", "dev")

    assert code == 0, out
    assert out.startswith(f"wamid.HBgL1: stored by\nwebhook {row_id}\n")
    assert "  message      wamid.HBgL1 from (personal: --show-personal): stored {'stored_at':" in out
    assert "WebhookTableName Scan pages 8" in out  # one a segment
    assert "a Scan of the log and the jobs table for Meta's id" in out
    assert "where is my parcel" not in out
    assert ANA not in out


def test_a_comment_id_leads_to_the_delivery_that_stored_it_in_json(pipeline, stack, lanectl):
    payload = feed(comment_change("1020_3040", "how much is it?"))
    pipeline.deliver(payload)
    pipeline.drain()

    code, out, _ = lanectl("trace", "1020_3040", "--env", "dev", "--output", "json")

    assert code == 0, out
    document = json.loads(out)
    assert document["found_by"] == "1020_3040"
    assert document["id"] == webhook.log_id(encode(payload))
    [unit] = document["units"]
    assert (unit["kind"], unit["id"], unit["stored"]["label"]) == ("comment", "1020_3040", "other")
    assert document["reads"]["WebhookTableName Scan pages"] >= 1
    assert "how much" not in out


@pytest.mark.parametrize("unknown", ["wamid.NEVERSEEN", "m_neverseen", "999_999"])
def test_a_meta_id_nobody_stored_is_refused_and_nothing_is_written(pipeline, stack, lanectl, unknown):
    pipeline.deliver(whatsapp(messages=[text_message("wamid.other", "hi", sender=ANA)]))
    pipeline.drain()
    before = _snapshot(pipeline, stack)

    code, out, err = lanectl("trace", unknown, "--env", "dev")

    assert code == 2
    assert out == ""
    assert f"no delivery or job carrying the {'comment' if unknown[0].isdigit() else 'message'} {unknown} in " in err
    assert _snapshot(pipeline, stack) == before


def test_a_meta_id_is_found_among_other_deliveries_only_where_it_is_a_unit_not_a_word(pipeline, stack, lanectl):
    # Given a delivery whose text merely mentions wamid.HBgL7, and later the one carrying it
    quoting = whatsapp(messages=[text_message("wamid.HBgL6", "about wamid.HBgL7", sender=ANA)])
    carrying = whatsapp(messages=[text_message("wamid.HBgL7", "where is my parcel", sender=ANA)])
    for payload in (quoting, carrying):
        pipeline.deliver(payload)
    pipeline.drain()

    # When on-call traces the id
    code, out, _ = lanectl("trace", "wamid.HBgL7", "--env", "dev", "--output", "json")

    # Then the trace follows the delivery that carried it as a message
    assert code == 0, out
    assert json.loads(out)["id"] == webhook.log_id(encode(carrying))


def test_a_meta_id_search_narrowed_to_another_tenant_finds_nothing_and_says_where_it_looked(pipeline, stack, lanectl):
    pipeline.deliver(whatsapp(messages=[text_message("wamid.HBgL8", "hi", sender=ANA)]))
    pipeline.drain()

    code, out, err = lanectl("trace", "wamid.HBgL8", "--env", "dev", "--tenant", "someone-else", "--since", "1h")

    assert code == 2
    assert out == ""
    assert "no delivery or job carrying the message wamid.HBgL8" in err
    assert "tenant someone-else" in err


def test_a_stored_message_carries_no_index_key_for_trace(pipeline, stack):
    # Given a message stored by the messages lane
    pipeline.deliver(whatsapp(messages=[text_message("wamid.HBgL9", "hi", sender=ANA)]))
    pipeline.drain()

    # Then its item holds no key of an index by Meta's id: storing it was one write, no index entry
    items = [from_item(i) for i in pipeline.items(stack["DataTableName"])]
    [stored] = [i for i in items if str(i.get("sk", "")).endswith("#wamid.HBgL9")]
    assert not {"unit", "delivery"} & set(stored)
