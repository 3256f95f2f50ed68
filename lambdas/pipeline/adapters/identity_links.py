"""What an app-scoped id stands for (state table, `pk` = `identity#<hash of the app-scoped id>`).

Meta's data-deletion callback names the person by their app-scoped user id (Facebook Login's),
but what the pipeline stores is keyed by the ids its webhooks carry: WhatsApp phone numbers,
Messenger page-scoped ids, Instagram-scoped ids, comment authors' ids. Nothing in a webhook relates
one to the other. The product does: it knows which of its users logged in with which app-scoped id
and which number or conversation is theirs (Meta's ID Matching API, `/<app-scoped id>/ids_for_pages`,
gives a Page's page-scoped ids of an app-scoped one). It links them here, as hashes only
(`link`, or `lanectl erase --link`), and an erasure asked for by app-scoped id erases each.

`linked` is a String Set, so linking a new id adds to it. The item expires with the data it points
at (the effects retention, from its latest link), or goes with the erasure of the person.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain import senders
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.erasure.requests import IdentityLinksUnavailable

LINKED = "linked"


class IdentityLinks:
    def __init__(self, dynamodb: Any, state_table: str) -> None:
        self._dynamodb = dynamodb
        self._table = state_table

    def resolve(self, app_scoped_hash: str) -> tuple[str, ...]:
        try:
            item = self._dynamodb.get_item(
                TableName=self._table, Key=items.key(schema.PK, erasure.link_key(app_scoped_hash)), ConsistentRead=True
            ).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise IdentityLinksUnavailable(f"identity links read failed: {exc}") from exc
        linked = sorted(value for value in items.read(item, LINKED, set()) if senders.is_hash(value))
        return tuple(linked)

    def link(self, app_scoped_hash: str, sender_hashes: Iterable[str], *, expires_at: int) -> None:
        """Add `sender_hashes` to what `app_scoped_hash` stands for. Raises ValueError when that
        would link more than an erasure takes (erasure.MAX_LINKED)."""
        hashes = set(sender_hashes) - {app_scoped_hash}
        if not hashes or not all(senders.is_hash(value) for value in (app_scoped_hash, *hashes)):
            raise ValueError("a link joins an app-scoped id's hash to at least one other sender hash")
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=items.key(schema.PK, erasure.link_key(app_scoped_hash)),
                UpdateExpression="ADD #linked :hashes SET #ttl = :ttl",
                ConditionExpression="attribute_not_exists(#linked) OR size(#linked) <= :room",
                ExpressionAttributeNames={"#linked": LINKED, "#ttl": schema.TTL},
                ExpressionAttributeValues=items.to_item(
                    {":hashes": hashes, ":ttl": expires_at, ":room": erasure.MAX_LINKED - len(hashes)}
                ),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise ValueError(f"an app-scoped id links at most {erasure.MAX_LINKED} ids") from exc
            raise IdentityLinksUnavailable(f"identity links write failed: {exc}") from exc
        except BotoCoreError as exc:
            raise IdentityLinksUnavailable(f"identity links write failed: {exc}") from exc
