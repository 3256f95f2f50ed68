"""12. Meta's retries: the door fails for a while, and Meta's own sender is what brings the deliveries back.

Meta is played by local_aws/meta_sender.py on a scaled clock: a Page subscription (Messenger's
and Instagram's rules) batching its comments into signed deliveries, retrying each with back-off
while the door answers anything but 200, alerting after 15 minutes of failure and disabling the
subscription after an hour. The door is broken the way a bad deploy would break it: its
configuration names a Meta secret it cannot read, so every delivery is answered 500. Then it is
put back.

- this pipeline, door down for half of Meta's patience: every comment must be stored, once;
- door down for longer than Meta's patience: the subscription is disabled, and what Meta had not
  delivered, and everything after, is lost until someone subscribes the Page again (the runbook's
  "Webhooks Disabled"); the quiet-webhooks alarm is what pages about the silence that follows;
- baseline, a sender that never retries, the same half-patience outage: what it sent while the
  door was down is lost.

The retry times between "at once" and the 36-hour horizon are a model (Meta publishes only
"decreasing frequency"); the 15-minute alert and the 1-hour disable are Meta's documented figures.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace

from bench.scenarios.harness import Harness
from bench.scenarios.result import Result
from local_aws.meta_sender import HOUR, POLICIES, MetaSenderThread, MetaSubscription, Product, http_post
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta

QUIET_ALARM = "IngressWebhooksQuiet"


@dataclass(frozen=True)
class Params:
    scale: float = 1 / 120
    """Meta's clock: an hour of its patience in 30 s."""
    rate: float = 4.0
    """Comments a second on the Page."""
    before: float = 3.0
    """Seconds of comments before the door breaks (and as long again after it is back)."""
    patience_fraction: float = 0.5
    """The survivable outage, as a fraction of Meta's hour."""
    past_patience_fraction: float = 1.3
    settle_timeout: float = 90.0
    alarm_timeout: float = 30.0
    """Beyond the environment's quiet time, how long to wait for the quiet-webhooks alarm."""


FULL = Params()
QUICK = Params(scale=1 / 600, rate=3.0, before=1.0, settle_timeout=45.0)


@dataclass
class Phase:
    label: str
    outage: float
    subscription: MetaSubscription
    comments: list[str] = field(default_factory=list)
    stored: int = 0
    outage_started: float = 0.0
    """Wall clock, when the door broke."""


def _broken_secret(variables: dict[str, str], saved: dict[str, str]) -> None:
    saved["META_SECRET_ARN"] = variables["META_SECRET_ARN"]
    variables["META_SECRET_ARN"] = variables["META_SECRET_ARN"] + "-gone"


def _run_phase(s: Session, p: Params, label: str, outage: float, *, retries: bool) -> Phase:
    page = f"page-{label}-{uuid.uuid4().hex[:6]}"
    policy = POLICIES[Product.MESSENGER].scaled(p.scale)
    if not retries:
        policy = replace(policy, give_up_after=0.0, alert_after=None, disable_after=None)
    subscription = MetaSubscription("page", policy, s.client.app_secret)
    phase = Phase(label, outage, subscription)
    door = http_post(s.runtime.api_url.rstrip("/") + "/webhooks/meta")
    interval = 1 / p.rate
    saved: dict[str, str] = {}

    def comments_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            comment_id = f"{page}_c{len(phase.comments)}"
            phase.comments.append(comment_id)
            (entry,) = meta.page_comment(page, comment_id, f"is this in stock? ({len(phase.comments)})")["entry"]
            sender.publish(entry)
            time.sleep(interval)

    with MetaSenderThread(subscription, door) as sender:
        comments_for(p.before)
        s.update_environment("ingress", lambda variables: _broken_secret(variables, saved))
        phase.outage_started = time.time()
        try:
            comments_for(outage)
        finally:
            s.update_environment("ingress", lambda variables: variables.update(saved))
        comments_for(p.before)
        poll(sender.settled, p.settle_timeout, interval=0.2)

    def count() -> bool:
        phase.stored = sum(s.stored_comment(page, c, meta.commenter(c)) is not None for c in phase.comments)
        return phase.stored + subscription.dropped_entries >= len(phase.comments)

    poll(count, p.settle_timeout, interval=0.5)
    return phase


def _line(phase: Phase, meta_seconds: float) -> str:
    sub = phase.subscription
    fate = "disabled" if sub.disabled else ("alerted" if sub.alerted_at else "quiet")
    return (
        f"{phase.label}: door down {phase.outage:.1f} s ({phase.outage / meta_seconds:.0f} min of Meta's time); "
        f"{len(phase.comments)} comments, {phase.stored} stored, {sub.dropped_entries} lost; {sub.attempts} "
        f"attempts, {sub.failed_attempts} failed; subscription {fate}"
    )


def run(h: Harness, p: Params = FULL) -> Result:
    meta_minute = 60 * p.scale
    patience = HOUR * p.scale
    result = Result(
        number=12,
        title="Meta's retries",
        question="The door answers 500 for a while: with Meta's retries, is anything lost, and how long may it "
        "fail before Meta disables the subscription?",
        baseline="the same outage with a sender that never retries",
        project_label="Meta retrying",
        baseline_label="no retries",
    )
    started = time.monotonic()
    with h.session() as s:
        ours = _run_phase(s, p, "retried", patience * p.patience_fraction, retries=True)
        plain = _run_phase(s, p, "no-retries", patience * p.patience_fraction, retries=False)
        # Last, so nothing after it delivers: Meta has stopped sending, and the pipeline hears nothing
        past = _run_phase(s, p, "past-patience", patience * p.past_patience_fraction, retries=True)
        quiet_seconds = float(s.runtime.env.alarms.webhooks_quiet_seconds or 0)
        fired = poll(
            lambda: s.alarm_fired_at(QUIET_ALARM, past.outage_started),
            quiet_seconds + p.alarm_timeout,
            interval=0.5,
        )
        # The quiet alarm pages on the absence of its signal: INSUFFICIENT_DATA, not ALARM
        paged = [page for page in s.pages(QUIET_ALARM) if page.state == "INSUFFICIENT_DATA"]
    ours_sub, past_sub, plain_sub = ours.subscription, past.subscription, plain.subscription

    result.figure(
        "comments stored / sent, door down half an hour of Meta's time",
        f"{ours.stored}/{len(ours.comments)}",
        f"{plain.stored}/{len(plain.comments)}",
    )
    result.figure("comments lost", str(ours_sub.dropped_entries), str(plain_sub.dropped_entries))
    result.figure(
        "door down 78 min of Meta's time",
        f"subscription {'disabled' if past_sub.disabled else 'kept'}, {past_sub.dropped_entries} lost",
        "",
        "after Meta's hour nothing more is sent until the Page is subscribed again",
    )
    result.check(
        "with Meta retrying, every comment of a half-hour outage is stored",
        ours.stored == len(ours.comments) and ours_sub.dropped_entries == 0,
        _line(ours, meta_minute),
    )
    result.check(
        "Meta alerts during a half-hour outage but keeps the subscription",
        ours_sub.alerted_at is not None and not ours_sub.disabled,
        f"alerted after {ours_sub.alerted_after / meta_minute:.0f} min of failing"
        if ours_sub.alerted_after is not None
        else "no alert",
    )
    result.check(
        "past Meta's hour the subscription is disabled and comments are lost",
        past_sub.disabled and past_sub.dropped_entries > 0,
        _line(past, meta_minute),
    )
    result.check(
        "a sender that never retries loses the outage's comments",
        plain_sub.dropped_entries > 0 and plain.stored < len(plain.comments),
        _line(plain, meta_minute),
    )
    result.check(
        "the quiet-webhooks alarm pages once Meta has stopped sending",
        bool(fired) and bool(paged),
        f"paged {float(fired) - past.outage_started:.0f} s after the door broke ({quiet_seconds:.0f} s of silence "
        f"page locally), {len(paged)} page(s) in the on-call inbox"
        if fired
        else "the alarm did not fire",
    )
    result.headline = (
        f"door down {p.patience_fraction * 60:.0f} min of Meta's time: {ours.stored}/{len(ours.comments)} comments "
        f"stored by Meta's retries ({plain.stored}/{len(plain.comments)} without them); down "
        f"{p.past_patience_fraction * 60:.0f} min: subscription disabled, {past_sub.dropped_entries} lost"
    )
    result.data.update(
        ours_stored=ours.stored,
        ours_sent=len(ours.comments),
        ours_lost=ours_sub.dropped_entries,
        past_disabled=past_sub.disabled,
        past_lost=past_sub.dropped_entries,
        quiet_alarm_fired=bool(fired),
        quiet_pages=len(paged),
        plain_lost=plain_sub.dropped_entries,
        longest_failing_meta_minutes=ours_sub.longest_failing / meta_minute,
    )
    result.method = [
        f"A Page subscription played by the local Meta sender, its clock scaled {1 / p.scale:.0f}x (Meta's hour in "
        f"{patience:.0f} s): {p.rate:g} comments a second, batched into signed deliveries, each retried with "
        "back-off on any answer but 200 (at once, then 30 s doubling to an hour: a model of Meta's 'decreasing "
        "frequency').",
        "The door broken by UpdateFunctionConfiguration naming a Meta secret its role cannot read (every delivery "
        "500), then restored; comments before, during and after.",
        "Baseline: the same outage with a sender that drops a delivery at its first failure.",
    ]
    result.caveats = [
        "Meta's 15-minute alert and 1-hour disable are its documented figures for Messenger and Instagram; the "
        "retry times between are modelled. WhatsApp retries for 7 days and does not disable.",
        "The door answers 500 here; a 429 from the route's throttle counts the same to Meta.",
    ]
    result.seconds = time.monotonic() - started
    return result
