"""ai lane: a reply committed while its send is looking for it is sent, never dropped as superseded.

A turn sends its `reply.send` follow-up before it commits the reply (a crash repeats the send
rather than loses it), so the send may look for the reply before it is stored. Not finding it,
the send asks the conversation's marker whether a newer message has taken the turn over. If the
turn commits its reply, and a newer message stamps the marker, between those two reads, the
reply is stored and the marker names another message: read in that order, the send concludes
"superseded" and the stored reply is never sent (and the newer turn does not answer the older
messages: the committed reply took them out of the unanswered set). The marker must be read
first: once it has moved past a turn, that turn's commit can no longer land (its check that the
marker is still its own fails), so a reply missing after it is missing for good.
"""

from __future__ import annotations

import time
from typing import Any

import boto3

from pipeline import settings
from pipeline.adapters.clients import Clients
from pipeline.domain.envelope import Envelope
from pipeline.tasks import ai, replies
from pipeline.tasks.conversations import marker_key
from stacks.config.environments import LOCAL_ASSETS, LOCAL_SHOP
from tests.support.aws import REGION
from tests.unit.consumer.lane_env import with_lane

SHOP_NUMBER = LOCAL_ASSETS.tenants[LOCAL_SHOP].phones[0]
CUSTOMER = "15551230077"


class CommitsBetweenReads:
    """Right after the send's first read of the reply (which finds nothing), the turn commits the
    reply and a newer message stamps the conversation, as two other instances would."""

    def __init__(self, h: Any, conversation: str) -> None:
        self.h, self.conversation, self.key, self.done = h, conversation, None, False

    def params(self, params: dict[str, Any], **_: Any) -> None:
        self.key = repr(params.get("Key"))

    def answered(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if self.done or model.name != "GetItem" or "reply#m1" not in (self.key or "") or "Item" in parsed:
            return
        self.done = True
        pk = ai.conversation_pk(LOCAL_SHOP, self.conversation)
        self.h.dynamodb.Table("data").put_item(
            Item={**replies.reply_key(pk, "m1"), "text": "we open at 10", "send_state": "pending"}
        )
        self.h.dynamodb.Table("state").update_item(
            Key=marker_key(LOCAL_SHOP, self.conversation),
            UpdateExpression="SET #token = :token, #seq = :seq",
            ExpressionAttributeNames={"#token": "token", "#seq": "seq"},
            ExpressionAttributeValues={":token": "m2", ":seq": int(time.time())},
        )


def test_a_reply_committed_between_the_sends_reads_is_sent(lane, graph):
    # Given a turn of m1 whose reply is not committed yet, and its send on the lane
    h = lane("ai")
    options = {"resolve_seconds": "0", "resolve_rounds": "1"}
    h.environ = {**with_lane(h.environ, options=options), "GRAPH_API_URL": graph.url}
    h.dynamodb.Table("state").put_item(
        Item={**marker_key(LOCAL_SHOP, CUSTOMER), "token": "m1", "seq": int(time.time()) - 5, "text": "open?"}
    )
    base = Envelope(id="turn-m1", lane="ai", tenant=LOCAL_SHOP, kind=ai.TURN, source="internal", created_at=time.time())
    reply_to = {"channel": "whatsapp", "business_id": SHOP_NUMBER, "recipient": CUSTOMER}
    h.send(replies.send_envelope(base, base.id, {"conversation": CUSTOMER, "token": "m1", "reply_to": reply_to}))
    # And the turn's commit and a newer message landing right after the send's first look for the reply
    race = CommitsBetweenReads(h, CUSTOMER)
    session = boto3.session.Session(region_name=REGION)
    session.events.register("provide-client-params.dynamodb.*", race.params)
    session.events.register("after-call.dynamodb.*", race.answered)
    handler = h.handler(clients=Clients(region=REGION, credentials=settings.credentials(h.environ), _session=session))
    # When the lane works through it
    for _ in range(10):
        if not h.depth():
            break
        h.poll(handler, visibility=0)
    # Then the race happened, and the committed reply went out once
    assert race.done
    assert [sent.recipient for sent in graph.outbox()] == [CUSTOMER]
    stored = h.data(ai.conversation_pk(LOCAL_SHOP, CUSTOMER), "reply#m1")
    assert stored["send_state"] != "pending"
