"""Who paused a lane: one state-table item per lane (domain/dependencies/lane_pause.py), 60-odd bytes.

Costs: the consumer's mark is one conditional PutItem (1 write unit) per batch that pauses its
lane; an operator's pause or resume one write; the probe reads every lane it watches with one
eventually consistent BatchGetItem (0.5 read units a lane, found or not) a run, reads a mark it is
about to act on again, consistently, just before and just after it raises the lane's mapping (1
read unit each), and deletes a mark with one conditional DeleteItem (1 write unit) when its ramp
ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError

from pipeline import schema
from pipeline.adapters import items
from pipeline.domain.dependencies.lane_pause import BY_LANE, BY_OPERATOR, MARK_DAYS, PauseMark, pause_key

BY = "by"
REASON = "reason"
PAUSED_AT = "paused_at"


class PauseMarks:
    def __init__(self, client: Any, table: str, clock: Callable[[], float]) -> None:
        self._client = client
        self._table = table
        self._clock = clock

    def paused_by_lane(self, lane: str, reason: str) -> bool:
        """The consumer's mark, unless an operator's is there (theirs stands: the probe must not
        resume what they stopped). False when theirs was."""
        try:
            self._client.put_item(
                TableName=self._table,
                Item=self._item(lane, BY_LANE, reason),
                ConditionExpression="attribute_not_exists(#by) OR #by = :lane",
                ExpressionAttributeNames={"#by": BY},
                ExpressionAttributeValues=items.to_item({":lane": BY_LANE}),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def paused_by_operator(self, lane: str) -> None:
        self._client.put_item(TableName=self._table, Item=self._item(lane, BY_OPERATOR, "operator"))

    def resumed_by_operator(self, lane: str) -> None:
        self._client.delete_item(TableName=self._table, Key=items.key(schema.PK, pause_key(lane)))

    def read(self, lanes: Iterable[str], *, consistent: bool = False) -> dict[str, PauseMark]:
        """`consistent`: read what was last written (a write unit's worth more a lane), for the
        probe's look just before and after it resumes a lane."""
        keys = [items.key(schema.PK, pause_key(lane)) for lane in lanes]
        found: dict[str, PauseMark] = {}
        while keys:
            asked = {"Keys": keys[:100], **({"ConsistentRead": True} if consistent else {})}
            answer = self._client.batch_get_item(RequestItems={self._table: asked})
            keys = keys[100:] + list((answer.get("UnprocessedKeys", {}).get(self._table) or {}).get("Keys", []))
            for raw in answer.get("Responses", {}).get(self._table, []):
                item = items.from_item(raw) or {}
                lane = item[schema.PK].removeprefix(pause_key(""))
                found[lane] = PauseMark(
                    lane=lane,
                    by=item[BY],
                    reason=item.get(REASON, ""),
                    paused_at=float(item.get(PAUSED_AT, 0)),
                )
        return found

    def current(self, lane: str) -> PauseMark | None:
        """The lane's mark as last written (a consistent read); None when there is none."""
        return self.read([lane], consistent=True).get(lane)

    def ramp_ended(self, mark: PauseMark) -> bool:
        """The probe's delete, only of the pause it resumed: a newer pause's mark (the lane paused
        itself again meanwhile) or an operator's stays. False when it did."""
        try:
            self._client.delete_item(
                TableName=self._table,
                Key=items.key(schema.PK, pause_key(mark.lane)),
                ConditionExpression="#by = :lane AND #at = :at",
                ExpressionAttributeNames={"#by": BY, "#at": PAUSED_AT},
                ExpressionAttributeValues=items.to_item({":lane": BY_LANE, ":at": items.Milliseconds(mark.paused_at)}),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _item(self, lane: str, by: str, reason: str) -> dict[str, Any]:
        now = self._clock()
        return items.to_item(
            {
                schema.PK: pause_key(lane),
                BY: by,
                REASON: reason,
                PAUSED_AT: items.Milliseconds(now),
                schema.TTL: int(now) + MARK_DAYS * 86_400,
            }
        )
