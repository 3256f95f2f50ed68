"""Everything written about a person is found by their hash: jobs and data items with a query (of
the index, and of the person's partition), the week of raw deliveries by a scan of the webhook log
for the rows that carry it; through the real door, jobs API and tasks on moto."""

from __future__ import annotations

import boto3

from pipeline import schema
from pipeline.adapters.erasure import DynamoEraser
from pipeline.adapters.tables import TableNames
from pipeline.domain import senders
from pipeline.domain.effects import Table
from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import REGION, SENDER_KEY
from tests.unit.ingress.conftest import encode
from tests.unit.tasks.payloads import comment_change, feed, status, text_message, whatsapp

KEY = SENDER_KEY.encode()
ANA, BEN = "15550001", "15550002"


def _indexed(table: str, person: str) -> set[str]:
    """What the table's by_sender index holds for `person`: ids, or data keys as `pk|sk`."""
    response = boto3.client("dynamodb", region_name=REGION).query(
        TableName=table,
        IndexName=schema.SENDER_INDEX,
        KeyConditionExpression="#h = :h",
        ExpressionAttributeNames={"#h": schema.SENDER_HASH},
        ExpressionAttributeValues={":h": {"S": senders.sender_hash(KEY, person)}},
    )
    keys = set()
    for item in response["Items"]:
        keys.add(item[schema.ID]["S"] if schema.ID in item else f"{item[schema.PK]['S']}|{item[schema.SK]['S']}")
    return keys


def _partition(person: str) -> set[str]:
    """The data keys in `person`'s own partition of the data table, as `pk|sk`."""
    response = boto3.client("dynamodb", region_name=REGION).query(
        TableName="data",
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": schema.PK},
        ExpressionAttributeValues={":pk": {"S": _person(person)}},
    )
    return {f"{item[schema.PK]['S']}|{item[schema.SK]['S']}" for item in response["Items"]}


def _person(person: str) -> str:
    return senders.person_partition(senders.sender_hash(KEY, person))


def _scanned(person: str) -> set[str]:
    """The webhook log's rows that carry `person`'s hash, read as an erasure reads them."""
    eraser = DynamoEraser(
        boto3.client("dynamodb", region_name=REGION),
        TableNames({Table.WEBHOOK_LOG: "webhook-log"}),
        committer=None,  # type: ignore[arg-type]  # finding only
        kept=None,  # type: ignore[arg-type]
        clock=lambda: 0.0,
    )
    found: set[str] = set()
    start = None
    while True:
        page = eraser.scan_rows([senders.sender_hash(KEY, person)], start)
        found.update(page.log_ids)
        start = page.resume_from
        if start is None:
            return found


def _found(table: str, person: str) -> set[str]:
    """Everything an erasure finds for `person` in `table`: the log's rows by scan, the index of
    the others, and for the data table the person's partition too."""
    if table == "webhook-log":
        return _scanned(person)
    return _indexed(table, person) | (_partition(person) if table == "data" else set())


def test_a_delivery_from_one_person_is_found_by_its_row_and_by_what_was_stored(pipeline):
    # Given a text from Ana, and later the status of a message sent to her
    text = whatsapp(messages=[text_message("wamid.1", "at 5?", sender="+1 555 0001")])
    read = whatsapp(statuses=[status("wamid.9", "read")])  # recipient 15550001
    for payload in (text, read):
        pipeline.deliver(payload)
    pipeline.drain()

    # Then Ana's hash finds both rows, and both items in her partition, with no index entry for them
    assert _found("webhook-log", ANA) == {webhook.log_id(encode(text)), webhook.log_id(encode(read))}
    ana = _person(ANA)
    assert _found("data", ANA) == {f"{ana}|msg#waba-100#wamid.1", f"{ana}|status#waba-100#wamid.9"}
    assert _indexed("data", ANA) == set()


def test_a_delivery_naming_two_people_is_found_by_each_on_its_row_with_no_item_per_person(pipeline):
    # Given one delivery carrying a message from Ana and one from Ben
    batch = whatsapp(messages=[text_message("wamid.a", "hi", sender=ANA), text_message("wamid.b", "hello", sender=BEN)])
    pipeline.deliver(batch)
    log_id = webhook.log_id(encode(batch))

    # Then, processed or not, its row is found by each of them (it carries both hashes, and no one
    # hash it would attribute its writes to)
    assert _found("webhook-log", ANA) == {log_id} == _found("webhook-log", BEN)
    row = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName="webhook-log", Key={schema.ID: {"S": log_id}}
    )["Item"]
    assert schema.SENDER_HASH not in row
    assert len(row[schema.SENDER_HASHES]["BS"]) == 2
    # And once processed each finds their message in their partition, and no item per person was
    # written to point at the row: a write unit each, which the row's hashes make unnecessary
    pipeline.drain()
    for person, wamid in ((ANA, "wamid.a"), (BEN, "wamid.b")):
        assert _found("data", person) == {f"{_person(person)}|msg#waba-100#{wamid}"}


def test_a_delivery_naming_more_people_than_a_row_holds_gets_an_item_per_person(pipeline, monkeypatch):
    # Given a row may hold one hash only (as a delivery beyond MAX_NAMED_ON_ROW would find)
    monkeypatch.setattr(senders, "MAX_NAMED_ON_ROW", 1)
    batch = whatsapp(messages=[text_message("wamid.a", "hi", sender=ANA), text_message("wamid.b", "hello", sender=BEN)])
    pipeline.deliver(batch)
    pipeline.drain()
    log_id = webhook.log_id(encode(batch))

    # Then the row carries none, and each person's partition points at it
    assert _found("webhook-log", ANA) == set() == _found("webhook-log", BEN)
    for person, wamid in ((ANA, "wamid.a"), (BEN, "wamid.b")):
        pk, sk = senders.delivery_index_key(senders.sender_hash(KEY, person), log_id)
        assert _found("data", person) == {f"{pk}|msg#waba-100#{wamid}", f"{pk}|{sk}"}


def test_jobs_and_what_their_tasks_store_are_found_by_the_person_they_are_about(pipeline):
    # Given a reply turn for Ana's conversation and a comment of Ben's to triage, as jobs, and a
    # comment of someone else's from Meta
    turn = {"conversation": ANA, "message_id": "m-1", "text": "open?"}
    triage = {"comment_id": "c-2", "message": "refund", "post_id": "p-1", "from": {"id": BEN}}
    submitted = [
        pipeline.submit({"lane": "ai", "kind": "ai.inbound", "tenant": "shop-1", "payload": turn}),
        pipeline.submit({"lane": "engagement", "kind": "comment.triage", "tenant": "page-2", "payload": triage}),
    ]
    pipeline.deliver(feed(comment_change("c-3", "nice")))
    pipeline.drain()
    ana_job, ben_job = (response["headers"]["location"].rsplit("/", 1)[1] for response in submitted)

    # Then each finds their job row and what the task stored, and nothing of the other's
    assert _found("jobs", ANA) == {ana_job}
    assert _found("data", ANA) == {
        f"conversation#shop-1#{ANA}|in#m-1",
        f"conversation#shop-1#{ANA}|reply#m-1",
        f"conversation#shop-1#{ANA}|unanswered",
    }
    assert _found("jobs", BEN) == {ben_job}
    assert _found("data", BEN) == {f"{_person(BEN)}|comment#page-2#c-2"}
    assert _found("data", "user-9") == {f"{_person('user-9')}|comment#page-200#c-3"}
