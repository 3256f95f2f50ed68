"""Selecting deliveries and jobs from the raw log by tenant, lane, kind, status and time window:
what `lanectl trace --tenant` lists and what `lanectl replay` sends again.

**How a window is found: a paged, parallel Scan with a filter, not an index.** The webhook log has
one sparse index (`pending_by_age`, rows whose send failed) and the jobs table its pending index
and `by_sender`; neither is keyed by tenant and time. An index that is (tenant, received_at) would
hold every row, so the door would pay for its entry on every delivery: about one write unit each
(an entry under 1 KB, written once; later updates leave its key alone). At prod's planned traffic
(`lanectl plan prod`: 147.8M webhook deliveries and 4.1M jobs a month) that is about $96 a month
(writes, and the entries' storage), paid whether anyone lists anything or not. A Scan pays only
when an operator lists: it reads the whole table whatever the filter keeps, at 0.5 read unit per
4 KB (eventually consistent, which is enough for a listing: a row written in the last second may
be missed, and the window ends at now at the latest). The webhook log keeps a week, about 30.8 GiB
at prod's traffic, and the jobs table 30 days, about 9.0 GiB, so one listing of both reads about
5.2M units: about $0.65 (`lanectl plan` prints both figures, ops/cost/listing_cost.py). The
break-even is about 147 listings a month; a listing is an operator's act after an incident or a
fix, a few a week, so the Scan is the cheaper by more than an order of magnitude and adds
nothing to the door's path. The price is time: 30 GiB in
1 MB pages is about 31,000 pages, so the scan runs in parallel segments (`--segments`, 8 by
default: minutes on prod, not the better part of an hour) and says how far it got every
`PROGRESS_SECONDS`.
An erasure already scans the log for the same reason (adapters/erasure.py).

Every listing says what it read: pages, rows scanned and the read units DynamoDB reported
(ReturnConsumedCapacity; the local emulator reports a unit a page). Nothing is written. The
projection leaves the body and the job's payload out of what comes back unless the caller needs
it to replay (`with_payload`) or to search the bodies for Meta's id (`with_body`,
ops/commands/meta_id_search.py); it does not change what the read costs.

Rows are matched on `received_at` (webhook log) or `created_at` (jobs) within [since, until];
body parts and erased rows' parts are skipped (they carry `part_of`, no status).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from threading import Event, Lock
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops.aws import describe_error
from ops.context import Context
from ops.errors import AWS, USAGE, OpsError
from pipeline import schema
from pipeline.adapters.items import from_item, to_item
from pipeline.schema.rows import KIND, LANE, STATUS, TENANT
from pipeline.schema.webhook_log import BODY, BODY_ENCODING, BODY_PARTS
from pipeline.settings import tenant_ids
from pipeline.settings.tenant_assets import AssetBinding

WEBHOOK = "webhook"
JOB = "job"
SOURCES = (WEBHOOK, JOB)
DEFAULT_SEGMENTS = 8
PROGRESS_SECONDS = 10.0
MAX_SEGMENTS = 64
STATUSES = (
    schema.RowStatus.QUEUED,
    schema.RowStatus.DONE,
    schema.RowStatus.EXPIRED,
    schema.RowStatus.FAILED,
    schema.RowStatus.UNPARSEABLE,
    schema.RowStatus.ABANDONED,
    schema.RowStatus.ERASED,
)
_TABLES = {WEBHOOK: "WebhookTableName", JOB: "JobsTableName"}
_TAKEN_AT = {WEBHOOK: "received_at", JOB: "created_at"}
_LISTED = (
    schema.ID,
    "lane",
    "tenant",
    "kind",
    "status",
    "attempts",
    "deferrals",
    "error_class",
    "last_error",
    "replays",
    "updated_at",
    "finished_at",
    schema.GENERATION,
    schema.PENDING_SHARD,
    schema.SEND_FAILED_AT,
    schema.TTL,
    "deadline",
)
_FOR_REPLAY = {JOB: ("payload", schema.PROGRESS)}
_FOR_SEARCH = {WEBHOOK: (BODY, BODY_ENCODING, BODY_PARTS), JOB: ("payload",)}
"""What a search by Meta's id reads (ops/commands/meta_id_search.py): the body's first part, or the payload."""
_AGO = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d)")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Selection:
    """What to select. `since` and `until` are epoch seconds."""

    since: float
    until: float
    tenant: str | None = None
    lane: str | None = None
    kind: str | None = None
    statuses: tuple[str, ...] = ()
    sources: tuple[str, ...] = SOURCES
    tenant_assets: tuple[str, ...] = ()
    """The Meta assets the environment binds to `tenant` (Environment.tenant_assets): a delivery is
    filed under its first entry's asset, not under the tenant's name, so these are selected too."""

    @property
    def tenants(self) -> tuple[str, ...]:
        """Every value of a row's `tenant` the selection takes."""
        return (self.tenant, *self.tenant_assets) if self.tenant else ()

    @property
    def narrowed(self) -> bool:
        """Whether anything but the window narrows it (a replay of everything needs --all)."""
        return any((self.tenant, self.lane, self.kind, self.statuses)) or set(self.sources) != set(SOURCES)

    def as_json(self) -> dict[str, Any]:
        return {
            "since": iso(self.since),
            "until": iso(self.until),
            "tenant": self.tenant,
            "tenant_assets": list(self.tenant_assets),
            "lane": self.lane,
            "kind": self.kind,
            "statuses": list(self.statuses),
            "sources": list(self.sources),
        }

    def describe(self) -> str:
        parts = [f"{iso(self.since)} to {iso(self.until)}"]
        for name in ("tenant", "lane", "kind"):
            value = getattr(self, name)
            if value:
                parts.append(f"{name} {value}")
        if self.tenant_assets:
            parts.append("its Meta assets " + ", ".join(self.tenant_assets))
        if self.statuses:
            parts.append("status " + "|".join(self.statuses))
        if set(self.sources) != set(SOURCES):
            parts.append("only " + ", ".join(f"{s}s" for s in self.sources))
        return ", ".join(parts)


@dataclass(frozen=True)
class Row:
    source: str
    item: Mapping[str, Any]

    @property
    def id(self) -> str:
        return str(self.item[schema.ID])

    @property
    def taken_at(self) -> float:
        return float(self.item.get(_TAKEN_AT[self.source]) or 0)

    @property
    def status(self) -> str:
        return str(self.item.get(STATUS) or "")

    @property
    def lane(self) -> str:
        return str(self.item.get(LANE) or "")

    @property
    def tenant(self) -> str:
        return str(self.item.get(TENANT) or "")

    @property
    def kind(self) -> str:
        return str(self.item.get(KIND) or "")


@dataclass
class Reads:
    """What one table's scan cost."""

    table: str
    pages: int = 0
    scanned: int = 0
    read_units: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"pages": self.pages, "rows_scanned": self.scanned, "read_units": round(self.read_units, 1)}

    def line(self) -> str:
        return (
            f"{self.table}: {self.pages} page(s), {self.scanned} row(s) scanned, "
            f"{self.read_units:g} read unit(s) (eventually consistent Scan)"
        )


@dataclass
class Selected:
    rows: list[Row] = field(default_factory=list)
    reads: dict[str, Reads] = field(default_factory=dict)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_when(text: str, now: float, what: str) -> float:
    """An ISO 8601 time (naive means UTC), epoch seconds, a time ago (`90s`, `15m`, `2h`, `7d`), or
    `now`."""
    raw = text.strip()
    if raw == "now":
        return now
    ago = _AGO.fullmatch(raw)
    if ago:
        return now - float(ago.group(1)) * _UNIT_SECONDS[ago.group(2)]
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise OpsError(
            f"{what} {text!r} is not a time: give an ISO 8601 time (2026-05-01T10:02:00Z), epoch seconds, "
            "a time ago (90s, 15m, 2h, 7d) or now",
            USAGE,
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def selection(
    *,
    now: float,
    since: str | None,
    until: str | None,
    tenant: str | None = None,
    lane: str | None = None,
    lanes: Sequence[str] = (),
    kind: str | None = None,
    statuses: Iterable[str] = (),
    sources: Sequence[str] = SOURCES,
    assets: AssetBinding | None = None,
) -> Selection:
    """The checked selection, or OpsError(USAGE) saying what is wrong; nothing is read before."""
    if since is None:
        raise OpsError("give --since: the start of the window (2026-05-01T10:00Z, or 2h for two hours ago)", USAGE)
    start = parse_when(since, now, "--since")
    end = now if until is None else parse_when(until, now, "--until")
    if start > now:
        raise OpsError(f"--since {iso(start)} is in the future (now is {iso(now)}): nothing was taken yet", USAGE)
    if end > now:
        raise OpsError(f"--until {iso(end)} is in the future (now is {iso(now)}): leave it out to mean now", USAGE)
    if start > end:
        raise OpsError(f"--since {iso(start)} is after --until {iso(end)}: the window is empty", USAGE)
    if tenant is not None and not tenant_ids.is_valid(tenant):
        raise OpsError(
            f"{tenant!r} is not a tenant id: 1 to {tenant_ids.MAX_LENGTH} of letters, digits and _.:@- "
            "(a WhatsApp business account id, a page id, or a jobs API tenant)",
            USAGE,
        )
    if lane is not None and lanes and lane not in lanes:
        raise OpsError(f"unknown lane {lane!r}; lanes: {', '.join(lanes)}", USAGE)
    chosen = tuple(dict.fromkeys(statuses))
    unknown = [s for s in chosen if s not in STATUSES]
    if unknown:
        raise OpsError(f"unknown status {', '.join(unknown)}; statuses: {', '.join(STATUSES)}", USAGE)
    owned = assets.tenants.get(tenant) if assets is not None and tenant is not None else None
    return Selection(
        since=start,
        until=end,
        tenant=tenant,
        lane=lane,
        kind=kind,
        statuses=chosen,
        sources=tuple(sources),
        tenant_assets=() if owned is None else owned.all_ids(),
    )


def _scan_arguments(
    table: str, source: str, chosen: Selection, with_payload: bool, with_body: bool = False
) -> dict[str, Any]:
    names = {"#at": _TAKEN_AT[source], "#part": "part_of"}
    values: dict[str, Any] = {":since": chosen.since, ":until": chosen.until}
    conditions = ["#at BETWEEN :since AND :until", "attribute_not_exists(#part)"]
    for name in ("lane", "kind"):
        value = getattr(chosen, name)
        if value:
            names[f"#{name}"] = name
            values[f":{name}"] = value
            conditions.append(f"#{name} = :{name}")
    if chosen.tenants:
        names["#tenant"] = "tenant"
        tenants = [f":t{index}" for index in range(len(chosen.tenants))]
        values.update(zip(tenants, chosen.tenants, strict=True))
        conditions.append(f"#tenant IN ({', '.join(tenants)})")
    if chosen.statuses:
        names["#status"] = "status"
        placeholders = []
        for index, status in enumerate(chosen.statuses):
            values[f":s{index}"] = status
            placeholders.append(f":s{index}")
        conditions.append(f"#status IN ({', '.join(placeholders)})")
    projected = _LISTED + (_TAKEN_AT[source],) + (_FOR_REPLAY.get(source, ()) if with_payload else ())
    projected += tuple(a for a in _FOR_SEARCH[source] if with_body and a not in projected)
    for index, attribute in enumerate(projected):
        names.setdefault(f"#p{index}", attribute)
    return {
        "TableName": table,
        "FilterExpression": " AND ".join(conditions),
        "ProjectionExpression": ", ".join(f"#p{index}" for index in range(len(projected))),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_item(values),
        "ReturnConsumedCapacity": "TOTAL",
    }


def select(
    ctx: Context,
    chosen: Selection,
    *,
    segments: int = DEFAULT_SEGMENTS,
    with_payload: bool = False,
    with_body: bool = False,
    on_page: Callable[[Reads], None] | None = None,
) -> Selected:
    """Every row the selection matches, oldest first, and what finding them read. `with_body`: a
    webhook row's body (its first part) and a job's payload come back too."""
    selected = Selected()
    dynamodb = ctx.aws.client("dynamodb")
    lock = Lock()
    stop = Event()
    shown_at = [ctx.clock()]

    def progress(reads: Reads) -> None:
        if on_page is not None:
            on_page(reads)
        if ctx.clock() - shown_at[0] >= PROGRESS_SECONDS:
            shown_at[0] = ctx.clock()
            # On stderr: stdout may be one JSON document.
            ctx.console.err.write(f"  scanning {reads.table}: {reads.pages} page(s), {reads.scanned} row(s) so far\n")

    for source in chosen.sources:
        table = ctx.deployment().output(_TABLES[source])
        reads = selected.reads[source] = Reads(table)
        arguments = _scan_arguments(table, source, chosen, with_payload, with_body)

        def segment(number: int, source: str = source, reads: Reads = reads, arguments: dict = arguments) -> None:
            kwargs = {**arguments, "Segment": number, "TotalSegments": segments}
            while not stop.is_set():
                page = dynamodb.scan(**kwargs)
                with lock:
                    reads.pages += 1
                    reads.scanned += int(page.get("ScannedCount", 0))
                    reads.read_units += float(page.get("ConsumedCapacity", {}).get("CapacityUnits", 0))
                    selected.rows.extend(Row(source, from_item(item) or {}) for item in page.get("Items", []))
                    progress(reads)
                if "LastEvaluatedKey" not in page:
                    return
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

        try:
            with ThreadPoolExecutor(max_workers=segments) as pool:
                try:
                    for done in [pool.submit(segment, n) for n in range(segments)]:
                        done.result()
                except BaseException:
                    stop.set()  # Ctrl-C or a failed segment: the others stop after their page
                    raise
        except (BotoCoreError, ClientError) as exc:
            raise OpsError(f"cannot scan {table}: {describe_error(exc)}", AWS) from exc
    selected.rows.sort(key=lambda row: (row.taken_at, row.id))
    return selected
