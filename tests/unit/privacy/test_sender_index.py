"""Everything written about a person is found by their hash: jobs and data items with a query (of
the index, and of the person's partition), the week of raw deliveries by a scan of the webhook log
for the rows that carry it; through the real door, jobs API and tasks on moto."""

from __future__ import annotations

import boto3

from pipeline import schema
from pipeline.domain import senders, webhook
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
    response = boto3.client("dynamodb", region_name=REGION).scan(
        TableName="webhook-log",
        FilterExpression="#h = :h",
        ExpressionAttributeNames={"#h": schema.SENDER_HASH},
        ExpressionAttributeValues={":h": {"S": senders.sender_hash(KEY, person)}},
        ConsistentRead=True,
    )
    return {item[schema.ID]["S"] for item in response["Items"]}


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


def test_a_delivery_naming_two_people_is_found_by_each_through_their_index_items(pipeline):
    # Given one delivery carrying a message from Ana and one from Ben
    batch = whatsapp(messages=[text_message("wamid.a", "hi", sender=ANA), text_message("wamid.b", "hello", sender=BEN)])
    pipeline.deliver(batch)
    pipeline.drain()
    log_id = webhook.log_id(encode(batch))

    # Then the row itself carries no index key, and each person finds their message and the row
    assert _found("webhook-log", ANA) == set() == _found("webhook-log", BEN)
    for person, wamid in ((ANA, "wamid.a"), (BEN, "wamid.b")):
        pk, sk = senders.delivery_index_key(senders.sender_hash(KEY, person), log_id)
        assert pk == _person(person)
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
