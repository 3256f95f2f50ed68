"""The audit of `lanectl replay`: who replayed what, when, and how many, per generation.

One item per generation in the state table, `pk` = `audit#replay#g<N>`, holding `runs`: a list with
one entry per run of that generation, each {who, selection, started_at, selected, to_send, sent,
refused, finished_at, outcome}. `who` is the caller's identity as STS names it (GetCallerIdentity,
free); `selection` is the filter as the command took it. A run is written when it starts (before
anything is sent, so a run that dies still left its entry) and completed when it ends, Ctrl-C
included: two UpdateItems, a write unit each for an item under 1 KB. A dry run writes nothing.
The item is kept `KEEP_DAYS`, longer than any log a replay can read from. Read it with
`aws dynamodb get-item --table-name <StateTableName> --key '{"pk":{"S":"audit#replay#g1"}}'`, or
see it at the next run of the same generation, which says it was used before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.context import Context
from ops.errors import AWS, OpsError
from pipeline import schema
from pipeline.adapters.items import from_item, to_item

KEEP_DAYS = 400
RUNS = "runs"


def key(generation: int) -> dict[str, str]:
    return {schema.PK: f"audit#replay#g{generation}"}


def who(ctx: Context) -> str:
    try:
        return str(ctx.aws.client("sts").get_caller_identity()["Arn"])
    except (BotoCoreError, ClientError) as exc:
        return f"unknown (GetCallerIdentity: {describe_error(exc)})"


def _table(ctx: Context) -> str:
    return ctx.deployment().output("StateTableName")


def earlier_runs(ctx: Context, generation: int) -> list[dict[str, Any]]:
    """The runs of `generation` so far (one consistent GetItem)."""
    try:
        found = ctx.aws.client("dynamodb").get_item(
            TableName=_table(ctx), Key=to_item(key(generation)), ConsistentRead=True
        )
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(f"cannot read the replay audit: {describe_error(exc)}", AWS) from exc
    item = from_item(found.get("Item")) or {}
    return list(item.get(RUNS) or [])


def begin(ctx: Context, generation: int, run: Mapping[str, Any]) -> int:
    """Writes the run's entry; returns its place in the generation's list."""
    try:
        answer = ctx.aws.client("dynamodb").update_item(
            TableName=_table(ctx),
            Key=to_item(key(generation)),
            UpdateExpression="SET #runs = list_append(if_not_exists(#runs, :none), :run), #ttl = :ttl",
            ExpressionAttributeNames={"#runs": RUNS, "#ttl": schema.TTL},
            ExpressionAttributeValues=to_item(
                {":none": [], ":run": [dict(run)], ":ttl": int(ctx.clock()) + KEEP_DAYS * 86_400}
            ),
            ReturnValues="UPDATED_NEW",
        )
    except (BotoCoreError, ClientError) as exc:
        raise OpsError(f"cannot write the replay audit, so nothing was sent: {describe_error(exc)}", AWS) from exc
    return len(from_item(answer["Attributes"])[RUNS]) - 1  # type: ignore[index]


def finish(ctx: Context, generation: int, place: int, ended: Mapping[str, Any]) -> str | None:
    """Completes the run's entry; returns a problem to report, or None. Never raises: what was sent
    is sent, and the command must still say so."""
    names = {"#runs": RUNS}
    sets = []
    values: dict[str, Any] = {}
    for index, (name, value) in enumerate(ended.items()):
        names[f"#f{index}"] = name
        values[f":v{index}"] = value
        sets.append(f"#runs[{place}].#f{index} = :v{index}")
    try:
        ctx.aws.client("dynamodb").update_item(
            TableName=_table(ctx),
            Key=to_item(key(generation)),
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=to_item(values),
        )
    except (BotoCoreError, ClientError) as exc:
        return f"the audit entry was not completed: {describe_error(exc)}"
    return None
