"""Meta source accounts' last-seen items in the accounts table (domain/webhook/account_silence.py has
the rule and the item's shape).

Every account is one item of the partition `accounts-seen`, sorted by the account's id, so the
sweeper reads them all with one Query a page (1 MB), never a scan (the state table has no sort
key, and the data table holds people's data the sweeper has no business reading). The door's note is one
UpdateItem of an item under 1 KB (1 write unit), made at most once per `note_seconds` per account
per instance; at prod's 1,000 accounts and every instance hearing from every account, one
partition takes at most 1,000 x instances / note_seconds writes a second (17 at 60 instances and
prod's hour), well within DynamoDB's 1,000 a partition. A note that fails is logged by the door
and tried again on the account's next delivery: it never fails a delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline import schema
from pipeline.adapters.items import from_item, to_item
from pipeline.domain.webhook.account_silence import (
    LAST_SEEN,
    PRODUCT,
    Account,
    NoteThrottle,
    Seen,
    slot_field,
    slot_of,
)
from pipeline.settings.silence_policy import AccountSilence

PARTITION = "accounts-seen"


def key(account: str) -> dict[str, str]:
    return {schema.PK: PARTITION, schema.SK: account}


class AccountsSeen:
    def __init__(self, dynamodb: Any, table: str, policy: AccountSilence) -> None:
        self._dynamodb = dynamodb
        self._table = table
        self._policy = policy
        self._throttle = NoteThrottle(policy)

    @property
    def policy(self) -> AccountSilence:
        return self._policy

    def note(self, accounts: Sequence[Account], now: float) -> int:
        """Stamp each account due a note; the number of writes made. Raises the first failure; the
        account is noted again after the interval, so a failing table costs no extra call a delivery."""
        written = 0
        for account in self._throttle.due(accounts, now):
            slot = slot_of(now, self._policy)
            self._dynamodb.update_item(
                TableName=self._table,
                Key=to_item(key(account.id)),
                UpdateExpression="SET #seen = :now, #product = :product, #slot = :slot, #ttl = :expires",
                ExpressionAttributeNames={
                    "#seen": LAST_SEEN,
                    "#product": PRODUCT,
                    "#slot": slot_field(slot, self._policy),
                    "#ttl": schema.TTL,
                },
                ExpressionAttributeValues=to_item(
                    {
                        ":now": now,
                        ":product": account.product,
                        ":slot": slot,
                        ":expires": int(now + self._policy.forget_seconds),
                    }
                ),
            )
            written += 1
        return written

    def read_all(self) -> tuple[list[Seen], int]:
        """Every account's item (eventually consistent: a note a second old is as good), and the
        Query pages it took (each at most 1 MB: about 0.5 read unit per 4 KB read)."""
        seen: list[Seen] = []
        pages = 0
        start: dict[str, Any] | None = None
        while True:
            request: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :pk",
                "ExpressionAttributeNames": {"#pk": schema.PK},
                "ExpressionAttributeValues": to_item({":pk": PARTITION}),
            }
            if start:
                request["ExclusiveStartKey"] = start
            answer = self._dynamodb.query(**request)
            pages += 1
            for raw in answer.get("Items") or []:
                item = from_item(raw)
                seen.append(Seen.from_item(str(item[schema.SK]), item))
            start = answer.get("LastEvaluatedKey")
            if not start:
                return seen, pages
