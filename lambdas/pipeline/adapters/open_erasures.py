"""Which person has an erasure pending (state table, `pk` = erasure.open_key(<their hash>)): the
job's id and the nonce its confirmation code is derived from (domain/erasure.code_for). A repeat of
a request while that job is pending answers its code again instead of making another full scan
of the log, and a claim is conditional on the job it replaces, so two requests at once make one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.erasure import requests as erasure
from pipeline.domain.jobs.requests import JobsTableUnavailable

JOB_ID = "job_id"
NONCE = "nonce"


@dataclass(frozen=True)
class OpenErasure:
    job_id: str
    nonce: str


class OpenErasures:
    def __init__(self, dynamodb: Any, state_table: str) -> None:
        self._dynamodb = dynamodb
        self._table = state_table

    def get(self, sender_hash: str) -> OpenErasure | None:
        try:
            item = self._dynamodb.get_item(
                TableName=self._table, Key=items.key(schema.PK, erasure.open_key(sender_hash)), ConsistentRead=True
            ).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise JobsTableUnavailable(f"open erasure read failed: {exc}") from exc
        if item is None or JOB_ID not in item or NONCE not in item:
            return None
        return OpenErasure(job_id=items.read(item, JOB_ID), nonce=items.read(item, NONCE))

    def claim(self, sender_hash: str, opened: OpenErasure, replaces: OpenErasure | None, expires_at: int) -> bool:
        """Point the person's item at `opened`, if it still points at `replaces` (None: at nothing).
        False when another request got there first."""
        if replaces is None:
            condition = "attribute_not_exists(#pk)"
            values: dict[str, Any] = {}
        else:
            condition = "#job = :replaced"
            values = {":replaced": replaces.job_id}
        try:
            self._dynamodb.put_item(
                TableName=self._table,
                Item=items.to_item(
                    {
                        schema.PK: erasure.open_key(sender_hash),
                        JOB_ID: opened.job_id,
                        NONCE: opened.nonce,
                        schema.TTL: expires_at,
                    }
                ),
                ConditionExpression=condition,
                ExpressionAttributeNames={"#pk": schema.PK} if replaces is None else {"#job": JOB_ID},
                **({"ExpressionAttributeValues": items.to_item(values)} if values else {}),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise JobsTableUnavailable(f"open erasure write failed: {exc}") from exc
        except BotoCoreError as exc:
            raise JobsTableUnavailable(f"open erasure write failed: {exc}") from exc
        return True
