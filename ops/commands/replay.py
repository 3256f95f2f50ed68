"""`lanectl replay`: re-process deliveries or jobs from the raw log on purpose, after a fix.

The rows are selected by lane, tenant, kind, status and time window (ops/log_selection.py: one
Scan per table, its reads printed). Each is sent to its lane again as the sweeper would rebuild it
(adapters/row_envelopes.py), with the replay's generation (domain/consumer/generations.py): the consumer
runs the task again although the first run left its done-mark, and its keyed writes replace what
an earlier generation stored. The same generation twice changes nothing the second time, so a run
that was interrupted, or repeated by mistake, is safe to run again: what already ran is a
duplicate. A later fix takes a higher generation.

What is not sent, and said: rows never enqueued or erased (`unparseable`, `erased`); rows past
their retention or their lane's expiry (a replay does not extend a deadline: the consumer would
settle them expired at once); rows of a lane whose task answers customers (`ai`: its turns send
replies through Meta, and re-opening answered messages could answer them again), which
`--lane ai` is refused for.

Sending is paced like a DLQ redrive (`--rate`, messages a second) and may ramp up to that rate
over `--ramp` in the steps a lane resumes by (domain/dependencies/ramp.py), so a dependency that has just been
fixed is not met by the whole window at once. Progress is shown; Ctrl-C stops it, and what was
sent stays sent (it runs once for its generation). `--dry-run` says how many, by lane and status,
how long at the rate, and what they cost, and writes nothing. Every run that sends writes an
audit entry first and completes it at the end (ops/commands/replay_audit.py).

Cost: the listing's reads (printed), one SendMessageBatch per ten rows, and per replayed
delivery the consumer's writes (ops/cost/listing_cost.replay_units: on `messages` about 1.1
write units, its message put again and the batch's drain count, against 2.1 for its first
delivery).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ops import log_selection
from ops.aws import describe_error
from ops.commands import replay_audit
from ops.context import Context
from ops.cost.listing_cost import replay_units
from ops.errors import FAILED, INTERRUPTED, NOTHING_TO_DO, OK, USAGE, OpsError
from ops.log_selection import Row, Selected, Selection
from ops.output import duration
from ops.progress import Progress
from pipeline import schema
from pipeline.adapters import row_envelopes
from pipeline.adapters.lane_queue import QueueSender
from pipeline.domain.consumer import generations
from pipeline.domain.dependencies.ramp import RAMP_FLOOR, ramp_levels
from pipeline.domain.envelope import Envelope, Outgoing
from pipeline.schema.jobs import DEADLINE
from stacks.runtime_env import SENDING_TASKS

MAX_RATE = 500
DEFAULT_RATE = 10
BATCH = 10
"""SendMessageBatch's most entries."""


@dataclass
class Plan:
    """The selected rows, sorted into what is sent and why the rest is not."""

    to_send: list[Row] = field(default_factory=list)
    held: Counter[str] = field(default_factory=Counter)


def _refuse_sending_lane(ctx: Context, lane: str | None) -> None:
    if lane is not None and ctx.env.lane(lane).policy.task in SENDING_TASKS:
        raise OpsError(
            f"the {lane} lane's task answers customers through Meta: a replay could answer them again, so it "
            "is not replayed (redrive its dead letters instead: lanectl dlq redrive)",
            USAGE,
        )


def check(ctx: Context, chosen: Selection, *, generation: int | None, everything: bool, dry_run: bool) -> None:
    """Bad input, before anything is read: exit 2 and nothing changed."""
    _refuse_sending_lane(ctx, chosen.lane)
    if not chosen.narrowed and not everything:
        raise OpsError(
            "this would replay every delivery and job in the window: narrow it (--lane, --tenant, --kind, "
            "--status, --source) or pass --all",
            USAGE,
        )
    if generation is None and not dry_run:
        raise OpsError(
            "give --generation N: one above every earlier replay's since the fix (a dry run says whether N was "
            "used before); running the same generation again changes nothing",
            USAGE,
        )


def _plan(ctx: Context, rows: Sequence[Row]) -> Plan:
    plan = Plan()
    now = ctx.clock()
    for row in rows:
        if row.lane not in ctx.env.lane_names:
            plan.held["lane not deployed"] += 1
            continue
        lane = ctx.env.lane(row.lane)
        expiry = lane.policy.default_expiry_seconds
        deadline = row.item.get(DEADLINE)
        expires = float(deadline) if deadline is not None else (None if expiry is None else row.taken_at + expiry)
        kept_until = row.item.get(schema.TTL)
        if row.status in generations.NOT_REPLAYABLE:
            plan.held[f"{row.status}: nothing to run"] += 1
        elif lane.policy.task in SENDING_TASKS:
            plan.held[f"{row.lane}: its task answers customers"] += 1
        elif kept_until is not None and float(kept_until) <= now:
            plan.held["past its retention"] += 1
        elif expires is not None and expires <= now:
            plan.held[f"past the {row.lane} lane's expiry"] += 1
        else:
            plan.to_send.append(row)
    return plan


def envelope_for(row: Row, generation: int) -> Envelope:
    """The row's message as the sweeper rebuilds it, as fresh work of the replay's generation:
    attempts start again (the fix is why it is sent), a long job starts from the top."""
    rebuilt = (
        row_envelopes.webhook_envelope(row.item)
        if row.source == log_selection.WEBHOOK
        else row_envelopes.job_envelope(row.item)
    )
    return replace(rebuilt, attempt=0, deferrals=0, progress=None, generation=generation)


def _counts(rows: Sequence[Row], what: str) -> str:
    counted = Counter(getattr(row, what) for row in rows)
    return ", ".join(f"{name or '-'} {count}" for name, count in counted.most_common())


def _dry_run(
    ctx: Context,
    chosen: Selection,
    selected: Selected,
    plan: Plan,
    generation: int | None,
    rate: int,
    ramp_seconds: float,
) -> int:
    console = ctx.console
    console.line("dry run: nothing will be sent or written")
    console.line(f"  selection: {chosen.describe()}")
    console.line(f"  matched: {len(selected.rows)} row(s); would send {len(plan.to_send)}")
    if plan.to_send:
        console.line(f"  by lane: {_counts(plan.to_send, 'lane')}")
        console.line(f"  by status: {_counts(plan.to_send, 'status')}")
        console.line(f"  by tenant: {_counts(plan.to_send, 'tenant')}")
    for reason, count in plan.held.most_common():
        console.line(f"  not sent: {count} {reason}")
    if generation is not None:
        runs = replay_audit.earlier_runs(ctx, generation)
        if runs:
            last = runs[-1]
            console.line(
                f"  generation {generation} was used before ({len(runs)} run(s), last by {last.get('who')} at "
                f"{last.get('started_at')}): what it already ran will be a duplicate"
            )
        else:
            console.line(f"  generation {generation}: not used before")
    seconds = _send_seconds(len(plan.to_send), rate, ramp_seconds)
    console.line(f"  pace: at most {rate} msg/s{_ramp_text(rate, ramp_seconds)}: about {duration(seconds)}")
    writes = dollars = 0.0
    for name, count in Counter(row.lane for row in plan.to_send).items():
        units = replay_units(ctx.env.lane(name))
        writes += units.writes * count
        dollars += units.dollars() * count
        console.line(f"  {name}: {units.writes:g} write unit(s) a replayed row")
    if plan.to_send:
        console.line(
            f"  cost: about {writes:,.0f} write units, ${dollars:.2g} of DynamoDB and SQS, plus the lanes' Lambda time"
        )
    for reads in selected.reads.values():
        console.line(f"  listing read {reads.line()}")
    return OK


def _ramp_text(rate: int, ramp_seconds: float) -> str:
    if not ramp_seconds:
        return ""
    levels = _levels(rate, ramp_seconds)
    return f", ramped {' → '.join(str(level) for level in levels)} over {duration(ramp_seconds)}"


def _levels(rate: int, ramp_seconds: float) -> list[int]:
    return ramp_levels(min(RAMP_FLOOR, rate), rate, ramp_seconds) if ramp_seconds else [rate]


def _send_seconds(count: int, rate: int, ramp_seconds: float) -> float:
    levels = _levels(rate, ramp_seconds)
    step = ramp_seconds / len(levels) if ramp_seconds else 0.0
    seconds, left = 0.0, float(count)
    for level in levels[:-1]:
        during = min(left, level * step)
        seconds += during / level
        left -= during
    return seconds + left / levels[-1]


class Pacer:
    """Messages a second, on the ramp's level for the time since the first send."""

    def __init__(self, ctx: Context, rate: int, ramp_seconds: float) -> None:
        self._ctx = ctx
        self._levels = _levels(rate, ramp_seconds)
        self._step = ramp_seconds / len(self._levels) if ramp_seconds else 0.0
        self._started = ctx.clock()
        self._next = self._started

    def rate(self) -> int:
        if not self._step:
            return self._levels[-1]
        level = int((self._ctx.clock() - self._started) / self._step)
        return self._levels[min(level, len(self._levels) - 1)]

    @property
    def paced_until(self) -> float:
        """When the pace would allow the next send: what the sends so far took, at their rate."""
        return self._next

    def wait_for(self, count: int) -> None:
        wait = self._next - self._ctx.clock()
        if wait > 0:
            self._ctx.sleep(wait)
        self._next = max(self._next, self._ctx.clock()) + count / self.rate()


def _batches(rows: Sequence[Row], pacer: Pacer) -> Iterator[list[Row]]:
    """Consecutive rows of one lane, as many as a second of the current rate allows (at most ten)."""
    batch: list[Row] = []
    for row in rows:
        if batch and (row.lane != batch[0].lane or len(batch) >= min(BATCH, pacer.rate())):
            yield batch
            batch = []
        batch.append(row)
    if batch:
        yield batch


@dataclass
class Sent:
    sent: int = 0
    refused: list[str] = field(default_factory=list)
    rate: float = 0.0


def _send(ctx: Context, rows: Sequence[Row], generation: int, pacer: Pacer, tally: Sent) -> None:
    sender = QueueSender(ctx.aws.client("sqs"))
    queues: dict[str, str] = {}
    started = ctx.clock()
    with Progress(ctx, len(rows), verb="sent") as progress:
        for batch in _batches(rows, pacer):
            lane = batch[0].lane
            if lane not in queues:
                queues[lane] = ctx.deployment().lane(lane).queue_url
            pacer.wait_for(len(batch))
            # Shown before the send, after the wait: a rate over the time the pace took, not the
            # burst of a batch sent the moment before.
            progress.show(tally.sent)
            try:
                refused = sender.send_batch(queues[lane], [Outgoing(envelope_for(row, generation)) for row in batch])
            except (BotoCoreError, ClientError) as exc:
                tally.refused += [f"{row.id}: {describe_error(exc)}" for row in batch]
                raise OpsError(f"the {lane} queue refused a batch: {describe_error(exc)}", FAILED) from exc
            tally.refused += [f"{failure.envelope.id}: {failure.code}" for failure in refused]
            tally.sent += len(batch) - len(refused)
            elapsed = max(pacer.paced_until, ctx.clock()) - started
            tally.rate = tally.sent / elapsed if elapsed > 0 else 0.0
        progress.show(tally.sent, final=True)


def _report(ctx: Context, tally: Sent, total: int, generation: int, code: int, outcome: str) -> None:
    summary = (
        f"sent {tally.sent} of {total} as generation {generation} ({tally.rate:.1f} msg/s achieved); "
        f"audit: {replay_audit.key(generation)[schema.PK]} in the state table"
    )
    if code == INTERRUPTED:
        ctx.console.line(
            f"interrupted: {summary}. What was sent runs once; run the same command again for the rest "
            f"(what generation {generation} already ran is a duplicate)"
        )
    elif code == OK:
        ctx.console.line(f"done: {summary}")
    else:
        ctx.console.line(f"stopped: {summary}")
        for refused in tally.refused[:10]:
            ctx.console.line(f"  refused {refused}")
        ctx.console.error(outcome)


def replay(
    ctx: Context,
    chosen: Selection,
    *,
    generation: int | None,
    rate: int = DEFAULT_RATE,
    ramp_seconds: float = 0.0,
    dry_run: bool = False,
    everything: bool = False,
    segments: int = log_selection.DEFAULT_SEGMENTS,
) -> int:
    check(ctx, chosen, generation=generation, everything=everything, dry_run=dry_run)
    selected = log_selection.select(ctx, chosen, segments=segments, with_payload=True)
    plan = _plan(ctx, selected.rows)
    if dry_run:
        return _dry_run(ctx, chosen, selected, plan, generation, rate, ramp_seconds)
    assert generation is not None
    for reads in selected.reads.values():
        ctx.console.line(f"listing read {reads.line()}")
    for reason, count in plan.held.most_common():
        ctx.console.line(f"not sent: {count} {reason}")
    if not plan.to_send:
        raise OpsError(f"nothing to replay: {len(selected.rows)} row(s) matched {chosen.describe()}", NOTHING_TO_DO)
    earlier = replay_audit.earlier_runs(ctx, generation)
    if earlier:
        ctx.console.line(
            f"generation {generation} was used before ({len(earlier)} run(s)): what it already ran is a duplicate"
        )
    run: dict[str, Any] = {
        "who": replay_audit.who(ctx),
        "selection": chosen.as_json(),
        "started_at": log_selection.iso(ctx.clock()),
        "selected": len(selected.rows),
        "to_send": len(plan.to_send),
        "rate": rate,
        "ramp_seconds": ramp_seconds,
    }
    place = replay_audit.begin(ctx, generation, run)
    ctx.console.line(
        f"replaying {len(plan.to_send)} row(s) as generation {generation} at most {rate} msg/s"
        f"{_ramp_text(rate, ramp_seconds)}; Ctrl-C stops it (what was sent stays sent)"
    )
    tally = Sent()
    outcome, code = "done", OK
    try:
        _send(ctx, plan.to_send, generation, Pacer(ctx, rate, ramp_seconds), tally)
    except KeyboardInterrupt:
        outcome, code = "interrupted", INTERRUPTED
    except OpsError as exc:
        outcome, code = f"failed: {exc.message}", exc.code
    if tally.refused and code == OK:
        outcome, code = f"{len(tally.refused)} refused", FAILED
    problem = replay_audit.finish(
        ctx,
        generation,
        place,
        {
            "sent": tally.sent,
            "refused": len(tally.refused),
            "finished_at": log_selection.iso(ctx.clock()),
            "outcome": outcome,
        },
    )
    _report(ctx, tally, len(plan.to_send), generation, code, outcome)
    if problem:
        ctx.console.error(problem)
    return code
