"""Erasing a person through Meta's data-deletion callback, on moto through the real handlers: the
callback answers a status page and a code, the erasure runs on its lane, and afterwards nothing
readable about the person is left in any table while everyone else's data is."""

from __future__ import annotations

import json
import secrets

import boto3

from pipeline import schema
from pipeline.adapters import items
from pipeline.adapters.erasure import DynamoEraser
from pipeline.adapters.tables import TableNames
from pipeline.adapters.webhook_log import WebhookLog
from pipeline.domain import senders, stored_text
from pipeline.domain.effects import Table
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import REGION, SENDER_KEY
from tests.unit.ingress.conftest import encode
from tests.unit.tasks.payloads import comment_change, feed, messenger_message, status, text_message, whatsapp

from .conftest import HOST, TABLES, deletion_callback

ANA, BEN = "15550001", "15550002"
ANA_SAYS = ("my secret plan", "call me at 9", "Ana Lopes", "refund my order")
BEN_SAYS = ("see you at 5", "great post")


def _ana_and_ben(pipeline) -> dict[str, str]:
    """Traffic about both: Ana's text (with a contact card so large its row needs body parts), a
    status of a message sent to her, a batch holding a message from each, a reply turn in her
    conversation and a comment of hers to triage; Ben's text and comment."""
    card = whatsapp(messages=[text_message("wamid.a1", ANA_SAYS[0], sender=ANA)])
    card["entry"][0]["changes"][0]["value"]["contacts"] = [
        {"wa_id": ANA, "profile": {"name": ANA_SAYS[2], "about": secrets.token_urlsafe(600_000)}}
    ]
    deliveries = {
        "card": card,
        "status": whatsapp(statuses=[status("wamid.out1", "read")]),  # sent to Ana
        "batch": whatsapp(
            messages=[
                text_message("wamid.a2", ANA_SAYS[1], sender=ANA),
                text_message("wamid.b1", BEN_SAYS[0], sender=BEN),
            ]
        ),
        "ben": whatsapp(messages=[text_message("wamid.b2", "ok!", sender=BEN)]),
        "ben_comment": feed(
            {
                **comment_change("c-b", BEN_SAYS[1]),
                "value": {**comment_change("c-b", BEN_SAYS[1])["value"], "from": {"id": BEN}},
            }
        ),
    }
    for payload in deliveries.values():
        assert pipeline.deliver(payload)["statusCode"] == 200
    for job in (
        {
            "lane": "ai",
            "kind": "ai.inbound",
            "payload": {"conversation": ANA, "message_id": "m-1", "text": ANA_SAYS[3]},
        },
        {
            "lane": "engagement",
            "kind": "comment.triage",
            "payload": {"comment_id": "c-a", "message": ANA_SAYS[3], "from": ANA},
        },
    ):
        assert pipeline.submit({**job, "tenant": "shop-1"})["statusCode"] == 202
    pipeline.drain()
    return {name: webhook.log_id(encode(payload)) for name, payload in deliveries.items()}


def _readable(pipeline) -> dict[str, list[str]]:
    """Every item of every table as text, with each logged body unpacked from its row and parts."""
    log = WebhookLog(boto3.client("dynamodb", region_name=REGION), "webhook-log")
    found: dict[str, list[str]] = {}
    for table in TABLES:
        texts = []
        for raw in pipeline.items(table):
            item = items.from_item(raw) or {}
            if table == "webhook-log" and "body" in item and "part_of" not in item:
                item["body"] = log.load_body(item[schema.ID]).decode("utf-8", "replace")
            if table == "data" and isinstance(item.get("text"), bytes):
                item["text"] = stored_text.read(item["text"])  # a long text is kept deflated
            texts.append(json.dumps(item, default=str, ensure_ascii=False))
        found[table] = texts
    return found


def _mentions(found: dict[str, list[str]], needles: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(table, needle) for table, texts in found.items() for text in texts for needle in needles if needle in text]


def test_meta_asks_and_afterwards_nothing_readable_about_the_person_remains(pipeline):
    # Given Ana and Ben have each written to the business, and Ana is readable everywhere
    rows = _ana_and_ben(pipeline)
    before = _readable(pipeline)
    assert {table for table, _ in _mentions(before, (ANA, *ANA_SAYS))} == set(TABLES)
    assert any("#part" in text for text in before["webhook-log"])

    # When Meta calls the data-deletion callback for her
    response = pipeline.forget(ANA)

    # Then it answers with her status page and confirmation code, and the erasure is pending
    assert response["statusCode"] == 200
    answer = json.loads(response["body"])
    code = answer["confirmation_code"]
    assert erasure.is_code(code)
    assert answer["url"] == f"https://{HOST}{erasure.CALLBACK_PATH}/{code}"
    pending = json.loads(pipeline.erasure_status(code)["body"])
    assert (pending["status"], pending["erased"]) == ("pending", None)

    # When its lane runs it
    pipeline.drain()

    # Then the status page says done, and no table holds anything readable about Ana: not her
    # number, her name, or anything she wrote, in rows, bodies, body parts, items, jobs or markers
    shown = json.loads(pipeline.erasure_status(code)["body"])
    assert (shown["status"], shown["confirmation_code"]) == ("done", code)
    assert shown["completed_at"] is not None
    # and says how much went, by kind: her three rows and the card's body part, her two jobs,
    # seven items (two messages, a status, a comment, three of the reply turn's and its
    # conversation's unanswered set; the batch naming her and Ben is found by the hashes on its
    # row, with no item pointing at it) and one marker
    assert shown["erased"] == {"webhook_rows": 3, "body_parts": 1, "jobs": 2, "items": 7, "markers": 1}
    after = _readable(pipeline)
    assert _mentions(after, (ANA, *ANA_SAYS)) == []
    assert not any("#part" in text for text in after["webhook-log"])
    # and nothing is indexed under her any more, nor does the erasure's own row keep its code
    ana = senders.sender_hash(SENDER_KEY.encode(), ANA)
    indexed = [i for t in TABLES for i in pipeline.items(t) if i.get(schema.SENDER_HASH) == {"S": ana}]
    assert indexed == []
    assert _mentions(after, (code,)) == []

    # And her rows are tombstones, so what was on its way to a lane finds them finished
    log = boto3.resource("dynamodb", region_name=REGION).Table("webhook-log")
    for name in ("card", "status", "batch"):
        row = log.get_item(Key={schema.ID: rows[name]}, ConsistentRead=True)["Item"]
        assert row["status"] == schema.RowStatus.ERASED
        assert "body" not in row
        assert schema.SENDER_HASH not in row

    # And Ben's data is untouched: his own rows, and what was stored of his messages and comment,
    # including his message from the batch that was erased whole
    assert {table for table, _ in _mentions(after, (BEN, *BEN_SAYS))} >= {"webhook-log", "data"}
    assert log.get_item(Key={schema.ID: rows["ben"]})["Item"]["status"] == schema.RowStatus.QUEUED
    ben_messages = [text for text in after["data"] if BEN_SAYS[0] in text]
    assert len(ben_messages) == 1


def test_the_erased_persons_jobs_are_tombstones_that_release_their_tenants_count(pipeline):
    # Given a reply turn for Ana's conversation that is still queued (its lane not run yet)
    response = pipeline.submit(
        {"lane": "ai", "kind": "ai.inbound", "tenant": "shop-1", "payload": {"conversation": ANA, "text": "hi"}}
    )
    job_id = json.loads(response["body"])["id"]
    state = boto3.resource("dynamodb", region_name=REGION).Table("state")
    assert state.get_item(Key={schema.PK: "queued#ai#shop-1"})["Item"]["queued"] == 1

    # When she is erased before it runs, and then its lane runs
    pipeline.forget(ANA)
    pipeline.drain(lanes=("bulk",))
    pipeline.drain()

    # Then the job is erased, not run: no payload, no conversation stored, its tenant's count freed
    row = boto3.resource("dynamodb", region_name=REGION).Table("jobs").get_item(Key={schema.ID: job_id})["Item"]
    assert row["status"] == schema.RowStatus.ERASED
    assert "payload" not in row
    assert schema.SENDER_HASH not in row
    assert state.get_item(Key={schema.PK: "queued#ai#shop-1"})["Item"]["queued"] == 0
    assert _mentions(_readable(pipeline), (ANA,)) == []


def test_a_delivery_still_queued_when_its_sender_is_erased_is_never_stored(pipeline):
    # Given Ana's text logged by the door, its message waiting on the messages lane
    payload = whatsapp(messages=[text_message("wamid.late", ANA_SAYS[0], sender=ANA)])
    pipeline.deliver(payload)

    # When she is erased first, and the messages lane runs after
    pipeline.forget(ANA)
    pipeline.drain(lanes=("bulk",))
    pipeline.drain()

    # Then the message found its row erased and stored nothing
    assert _mentions(_readable(pipeline), (ANA, ANA_SAYS[0])) == []
    assert pipeline.dead_letters() == {name: [] for name in pipeline.lanes}


def test_a_delivery_naming_several_people_still_queued_when_one_is_erased_stores_nothing_of_them(pipeline):
    # Given a batch holding a message from Ana and one from Ben, logged by the door, its message
    # waiting on the messages lane (or dead-lettered, to be redriven later)
    batch = whatsapp(
        messages=[
            text_message("wamid.a-late", ANA_SAYS[0], sender=ANA),
            text_message("wamid.b-late", BEN_SAYS[0], sender=BEN),
        ]
    )
    pipeline.deliver(batch)

    # When Ana is erased first, both passes, and the messages lane runs after
    pipeline.forget(ANA)
    pipeline.drain(lanes=("bulk",))
    pipeline.drain()

    # Then the log's scan found the batch by her hash on its row, and it was erased whole: nothing
    # of Ana was stored (Ben's message in it goes too: the raw body is not cut apart)
    assert _mentions(_readable(pipeline), (ANA, ANA_SAYS[0])) == []
    row = (
        boto3.resource("dynamodb", region_name=REGION)
        .Table("webhook-log")
        .get_item(Key={schema.ID: webhook.log_id(encode(batch))}, ConsistentRead=True)["Item"]
    )
    assert row["status"] == schema.RowStatus.ERASED
    assert pipeline.dead_letters() == {name: [] for name in pipeline.lanes}


def test_a_forged_or_unsigned_callback_is_refused_and_nothing_is_written_or_sent(pipeline, metrics):
    # Given callbacks that Meta did not sign: with a guessed secret, with no signed request, garbled
    forged = pipeline.forget(ANA, secret="guessed-secret")
    unsigned = pipeline.callback(deletion_callback(None), None)
    garbled = pipeline.callback(deletion_callback("not.a.signed.request"), None)

    # Then each is refused (403 for a wrong signature, 401 without a usable one)
    assert [forged["statusCode"], unsigned["statusCode"], garbled["statusCode"]] == [403, 401, 401]
    # and nothing was written or sent: no job row, no erasure on its lane
    assert pipeline.items("jobs") == []
    assert pipeline.lanes["bulk"].depth() == 0
    reasons = {dims["Reason"] for name, dims in metrics() if name == "ErasureRefused"}
    assert reasons == {"signed_request_mismatch", "signed_request_missing", "signed_request_malformed"}


def test_the_status_page_knows_only_codes_it_issued(pipeline):
    code = json.loads(pipeline.forget(BEN)["body"])["confirmation_code"]
    job_id = erasure.job_id(code)

    assert pipeline.erasure_status(code)["statusCode"] == 200
    for unknown in (secrets.token_hex(16), "not-a-code", job_id, code.upper()):
        assert pipeline.erasure_status(unknown)["statusCode"] == 404


def test_the_scan_of_the_log_pages_through_every_row_and_finds_only_the_persons(pipeline):
    # Given five of Ana's deliveries among seven of Ben's in the webhook log
    ana = {webhook.log_id(encode(pipeline_text(n, ANA))) for n in range(5)}
    for n in range(5):
        pipeline.deliver(pipeline_text(n, ANA))
    for n in range(7):
        pipeline.deliver(pipeline_text(n, BEN))
    eraser = DynamoEraser(
        boto3.client("dynamodb", region_name=REGION),
        TableNames({Table.WEBHOOK_LOG: "webhook-log"}),
        committer=None,  # type: ignore[arg-type]  # finding only: nothing is committed
        kept=None,  # type: ignore[arg-type]
        clock=lambda: 0.0,
        scan_page_items=2,
    )

    # When the log is scanned for Ana two rows at a time
    found: list[str] = []
    pages, start = 0, None
    while True:
        page = eraser.scan_rows([senders.sender_hash(SENDER_KEY.encode(), ANA)], start)
        found.extend(page.log_ids)
        pages += 1
        start = page.resume_from
        if start is None:
            break

    # Then every page was read, and exactly her rows were found, each once
    assert pages >= 6
    assert sorted(found) == sorted(ana)


def pipeline_text(n: int, sender: str) -> dict:
    return whatsapp(messages=[text_message(f"wamid.{sender}.{n}", f"note {n}", sender=sender)])


def test_a_repeat_while_an_erasure_is_pending_answers_its_code_and_makes_no_job(pipeline, metrics):
    # Given Meta asked for Ana's erasure, and asks again (a retry, or the same request replayed)
    first = json.loads(pipeline.forget(ANA)["body"])["confirmation_code"]
    again = json.loads(pipeline.forget(ANA)["body"])["confirmation_code"]

    # Then both answers carry the one pending erasure's code, and one job was made
    assert again == first
    assert len([r for r in pipeline.items("jobs") if r["kind"]["S"] == erasure.KIND]) == 1
    assert ("ErasureRepeated", {}) in metrics()
    # and no table holds the code (the status page's only credential)
    assert _mentions(_readable(pipeline), (first,)) == []

    # When that erasure is done, a new request is a new erasure with its own code
    pipeline.drain()
    later = json.loads(pipeline.forget(ANA)["body"])["confirmation_code"]
    assert later != first
    assert len([r for r in pipeline.items("jobs") if r["kind"]["S"] == erasure.KIND]) == 2


def test_meta_naming_an_app_scoped_id_erases_the_ids_the_product_linked_to_it(pipeline):
    from pipeline.adapters.identity_links import IdentityLinks

    # Given Ana wrote on WhatsApp and on Messenger (page-scoped id), and the product linked both to
    # the app-scoped id Meta knows her by
    rows = _ana_and_ben(pipeline)
    app_scoped, page_scoped = "10223344556677", "6012345678"
    assert pipeline.deliver(messenger_message(page_scoped, "m-mid-1", "my messenger secret"))["statusCode"] == 200
    pipeline.drain()
    key = SENDER_KEY.encode()
    IdentityLinks(boto3.client("dynamodb", region_name=REGION), "state").link(
        senders.sender_hash(key, app_scoped),
        [senders.sender_hash(key, ANA), senders.sender_hash(key, page_scoped)],
        expires_at=2_000_000_000,
    )

    # When Meta calls the callback with the app-scoped id, and the erasure runs
    code = json.loads(pipeline.forget(app_scoped)["body"])["confirmation_code"]
    pipeline.drain()

    # Then nothing readable of Ana is left, on either channel, and the status says what went
    after = _readable(pipeline)
    assert _mentions(after, (ANA, *ANA_SAYS, page_scoped, "my messenger secret")) == []
    shown = json.loads(pipeline.erasure_status(code)["body"])
    assert shown["status"] == "done"
    assert shown["erased"]["webhook_rows"] == 4
    assert {table for table, _ in _mentions(after, (BEN, *BEN_SAYS))} >= {"webhook-log", "data"}
    assert rows
    # and which ids were hers went with them
    assert [i for i in pipeline.items("state") if i[schema.PK]["S"].startswith(erasure.LINK_PREFIX)] == []


def test_an_erasure_of_someone_nothing_is_held_about_says_no_data_held(pipeline):
    _ana_and_ben(pipeline)

    code = json.loads(pipeline.forget("10299999999999")["body"])["confirmation_code"]
    pipeline.drain()

    shown = json.loads(pipeline.erasure_status(code)["body"])
    assert (shown["status"], shown["erased"]) == ("no_data_held", None)
    assert shown["completed_at"] is not None


def test_an_erasure_notes_its_progress_on_its_pending_job_row_and_never_on_a_finished_one(pipeline):
    from pipeline.adapters.transactions import Committer

    # Given a pending erasure job and an eraser over the real tables
    code = json.loads(pipeline.forget(ANA)["body"])["confirmation_code"]
    job_id = erasure.job_id(code)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    names = TableNames({Table.JOBS: "jobs", Table.WEBHOOK_LOG: "webhook-log", Table.DATA: "data", Table.STATE: "state"})
    eraser = DynamoEraser(dynamodb, names, Committer(dynamodb, names), kept=None, clock=lambda: 1_800_000_123.5)  # type: ignore[arg-type]
    progress = {"scan_from": {"id": {"S": "wh-4f1c"}}, "erased": {"webhook_rows": 5}}

    # When it notes where it got to
    eraser.note_progress(job_id, progress)

    # Then the row keeps it, with the time, for the sweeper and for a replay
    jobs_table = boto3.resource("dynamodb", region_name=REGION).Table("jobs")
    row = jobs_table.get_item(Key={schema.ID: job_id}, ConsistentRead=True)["Item"]
    assert row["progress"] == progress
    assert float(row["alive_at"]) == 1_800_000_123.5

    # And once the erasure is done, a late note changes nothing
    pipeline.drain()
    eraser.note_progress(job_id, {"scan_from": {"id": {"S": "wh-late"}}})
    assert jobs_table.get_item(Key={schema.ID: job_id}, ConsistentRead=True)["Item"]["status"] == "done"
    assert jobs_table.get_item(Key={schema.ID: job_id}, ConsistentRead=True)["Item"]["progress"] == progress
