"""Which delivery or job carried one of Meta's ids, for `lanectl trace wamid.…` (or `m_…`, or a
comment's `<post>_<comment>`): a Scan of the raw log, not an index.

**Why a Scan.** An index from Meta's id to the delivery would take an entry on every message and
comment the pipeline stores: a write unit each (at the data table's Standard-IA price in prod),
131.4M a month at prod's planned traffic, about $103 a month before the entries' storage, paid
whether anyone traces anything or not, and a second write unit on a webhook whose whole cost is
about two. A trace by Meta's id is an operator's act about one complaint; it costs what a listing
of the raw log costs (ops/log_selection.py, `lanectl plan` prints it: about $0.65 at prod), so
the Scan is the cheaper below about 150 such traces a month, and adds nothing to any webhook.

**What it reads.** The webhook log and the jobs table, in parallel segments, eventually
consistent, with the row's body (part 0) or the job's payload projected; `--tenant` and
`--since`/`--until` filter what comes back (not what the Scan reads, which is the whole table):
without them every body in the log comes back to be inflated here, about 31 GiB at prod's week,
so give the business's id and roughly when. A body is inflated only when its bytes could hold the
id (a cheap test on the raw bytes), then read with the tasks' own parser (tasks/meta.py), so a
match is a unit the tasks would have stored, not a substring of someone's text. A body in several
parts takes a GetItem a part.

**What it can find.** What the log and the jobs table still hold: a delivery within the raw
retention (a week in prod), a job within the jobs table's. Past that the row is gone, and with it
everything `lanectl trace` shows but the stored item itself.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

from ops import log_selection
from ops.context import Context
from ops.errors import AWS, OpsError
from ops.log_selection import Row, Selected, Selection
from pipeline.domain.webhook import body as webhook_body
from pipeline.domain.webhook.delivery import WebhookLogUnavailable
from pipeline.schema.webhook_log import BODY, BODY_ENCODING, BODY_PARTS
from pipeline.tasks import meta

MESSAGE, COMMENT = "message", "comment"


def carriers(ctx: Context, kind: str, meta_id: str, window: Selection, segments: int) -> tuple[list[Row], Selected]:
    """The rows, oldest first, whose delivery or job carries Meta's `meta_id` as a `kind` (message or
    comment), and what the Scan read."""
    selected = log_selection.select(ctx, window, segments=segments, with_body=True)
    needles = {meta_id.encode(), meta_id.replace("/", "\\/").encode()}  # Meta may escape a slash
    found = [row for row in selected.rows if _carries(ctx, row, kind, meta_id, needles)]
    return found, selected


def _carries(ctx: Context, row: Row, kind: str, meta_id: str, needles: set[bytes]) -> bool:
    payload = _webhook_payload(ctx, row, needles) if row.source == log_selection.WEBHOOK else _job_payload(row)
    if payload is None:
        return False
    if isinstance(payload, Mapping) and "entry" not in payload and payload.get("comment_id"):
        units = meta.Units()
        meta.add_comment(payload, units)  # a job of one comment (tasks/engagement.py)
    else:
        units = meta.read(payload)
    ids = {m.id for m in units.messages} if kind == MESSAGE else {c.id for c in units.comments}
    return meta_id in ids


def _webhook_payload(ctx: Context, row: Row, needles: set[bytes]) -> Any:
    part = row.item.get(BODY)
    if not isinstance(part, bytes | bytearray):
        return None  # unparseable rows keep theirs, erased ones none
    try:
        if int(row.item.get(BODY_PARTS) or 1) > 1:
            from pipeline.adapters.webhook_log import WebhookLog

            log = WebhookLog(ctx.aws.client("dynamodb"), ctx.deployment().output("WebhookTableName"))
            raw = log.load_body(row.id)
        else:
            raw = webhook_body.unpack(row.item.get(BODY_ENCODING), [bytes(part)])
    except WebhookLogUnavailable as exc:
        raise OpsError(f"cannot read the body of {row.id}: {exc}", AWS) from exc
    except (KeyError, ValueError, OSError, zlib.error):
        return None  # a part gone (the row's TTL) or bytes no encoding reads: not this one
    if not any(needle in raw for needle in needles):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _job_payload(row: Row) -> Any:
    payload = row.item.get("payload")
    return payload if isinstance(payload, Mapping) else None
