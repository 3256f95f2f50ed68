"""15. One account goes quiet while the others send: the per-account alarm pages, naming it alone.

Four WhatsApp Business Accounts deliver to the local runtime: three steadily, one once. Then one
of the steady three stops, as a Page whose subscription Meta disabled, or a business that removed
the app, would; the other two carry on. The door stamps each account it hears from at most once
per note interval per instance (lambdas/pipeline/adapters/accounts_seen.py), each sweep counts the
accounts that normally send and are quiet too long (lambdas/pipeline/domain/webhook/account_silence.py),
and the `QuietAccounts` alarm pages through the on-call topic.

- this pipeline: the page reaches the local on-call inbox, and the sweeper's line names the silent
  account and no other (not the ones still sending, not the one that only ever sent once);
- baseline: the pipeline-wide `WebhooksQuiet` alarm, which hears the others and stays quiet.

Then on-call asks Meta: `lanectl meta check` (in its own process, against the runtime's emulator
and its Graph API fake, where the silent account's app subscription is gone, the steady ones'
are in place and the one-off account is unknown to Meta) must flag the silent one and exit 1.

Clocks are the local environment's (stacks/config/account_silence.py): an hour's slot is 2 s,
quiet after two slots (prod: two hours).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from bench.scenarios.harness import Harness
from bench.scenarios.result import Result
from local_aws.iam import ledger
from ops.drive import Session, poll
from ops.drive import meta_payloads as meta

QUIET_ACCOUNTS_ALARM = "SweeperQuietAccounts"
PIPELINE_QUIET_ALARM = "IngressWebhooksQuiet"
QUIET_LINE = "source accounts quiet"


@dataclass(frozen=True)
class Params:
    every: float = 0.5
    """Seconds between one steady account's deliveries."""
    warm: float = 16.0
    """Seconds all three steady accounts send before one stops (the rule needs a full history)."""
    alarm_timeout: float = 40.0
    """After the silence, how long to wait for the page."""


FULL = Params()
QUICK = Params(every=0.5, warm=14.0, alarm_timeout=35.0)


def _deliver(s: Session, account: str) -> int:
    wamid = f"wamid.{uuid.uuid4().hex}"
    return s.client.deliver(meta.whatsapp_message(account, wamid, "is my order on its way?")).status


def _door_calls(before: object, after: object) -> tuple[int, int]:
    """(log writes, account notes) the door's role made between two ledger snapshots."""

    def count(used: object, action: str, table: str) -> int:
        return sum(
            n
            for (role, act, resource), n in used.items()  # type: ignore[attr-defined]
            if "Webhook" in role and act == action and table in resource
        )

    writes = count(after, "dynamodb:PutItem", "WebhookLog") - count(before, "dynamodb:PutItem", "WebhookLog")
    notes = count(after, "dynamodb:UpdateItem", "Accounts") - count(before, "dynamodb:UpdateItem", "Accounts")
    return writes, notes


def run(h: Harness, p: Params = FULL) -> Result:
    tag = f"{uuid.uuid4().int % 10_000:04d}"  # digits: Meta's ids are, and lanectl asks Meta about no other
    silent, steady, once = f"4100{tag}", [f"4200{tag}", f"4300{tag}"], f"4400{tag}"
    result = Result(
        number=15,
        title="Quiet accounts",
        question="One account that normally sends goes quiet while the others keep sending: does on-call hear "
        "about that account, and only that one?",
        baseline="the pipeline-wide quiet-webhooks alarm, which hears the others",
        project_label="per-account alarm",
        baseline_label="pipeline-wide alarm",
    )
    started = time.monotonic()
    refused = 0
    with h.session(cli=True) as s:
        calls_before = ledger.used()
        silence = s.runtime.env.accounts.silence
        refused += _deliver(s, once) != 200
        end = time.monotonic() + p.warm
        while time.monotonic() < end:
            for account in (silent, *steady):
                refused += _deliver(s, account) != 200
            time.sleep(p.every)
        went_quiet = time.time()
        fired_at: float | None = None
        deadline = time.monotonic() + p.alarm_timeout
        while time.monotonic() < deadline and fired_at is None:
            for account in steady:
                refused += _deliver(s, account) != 200
            time.sleep(p.every)
            fired_at = s.alarm_fired_at(QUIET_ACCOUNTS_ALARM, went_quiet)
        paged = poll(lambda: [pg for pg in s.pages(QUIET_ACCOUNTS_ALARM) if pg.state == "ALARM"], 5, interval=0.5)
        pipeline_fired = s.alarm_fired_at(PIPELINE_QUIET_ALARM, went_quiet)
        named = {
            q["account"]
            for _function, line in s.log.lines(lambda _f, line: line.get("message") == QUIET_LINE)
            for q in line.get("quiet", [])
        }
        log_writes, notes = _door_calls(calls_before, ledger.used())
        # Meta's side of it: the silent account's subscription removed, the others' in place.
        for account in steady:
            s.runtime.graph.add_account(account, "whatsapp")
        s.runtime.graph.add_account(silent, "whatsapp", subscribed=False)
        checked = s.lanectl("meta", "check")

    delay = None if fired_at is None else fired_at - went_quiet
    result.figure(
        "seconds from the account's last delivery to the page",
        "-" if delay is None else f"{delay:.1f}",
        "never" if pipeline_fired is None else f"{pipeline_fired - went_quiet:.1f}",
        f"quiet after {silence.quiet_seconds:g} s here (an hour's slot is {silence.slot_seconds:g} s); prod: two hours",
    )
    result.figure(
        "account notes at the door per delivery",
        f"{notes}/{log_writes} = {notes / max(log_writes, 1):.3f}",
        "",
        f"at most one per account per {silence.note_seconds:g} s per instance",
    )
    result.check(
        "the per-account alarm pages once a steady account goes quiet",
        fired_at is not None and bool(paged),
        f"ALARM {delay:.1f} s after its last delivery, {len(paged)} page(s) in the on-call inbox"
        if delay is not None
        else "the alarm did not fire",
    )
    result.check(
        "only the silent account is named: not those still sending, nor one that sent once",
        named == {silent},
        f"named {sorted(named) or 'none'}; silent {silent}, still sending {steady}, once {once}",
    )
    result.check(
        "the pipeline-wide quiet alarm does not see it (the others keep it fed)",
        pipeline_fired is None,
        "stayed OK" if pipeline_fired is None else f"fired {pipeline_fired - went_quiet:.1f} s after",
    )
    result.check("every delivery was taken", refused == 0, f"{refused} refused")
    check_lines = checked.stdout.splitlines()
    flagged = [line for line in check_lines if line.startswith(silent)]
    result.check(
        "lanectl meta check flags the silent account's missing subscription (exit 1)",
        checked.returncode == 1 and bool(flagged) and "not_subscribed" in flagged[0],
        f"exit {checked.returncode}; " + (flagged[0] if flagged else checked.stderr.strip()[:200]),
    )
    result.headline = (
        f"a steady account went quiet while two others sent: paged {delay:.1f} s after its last delivery, naming it "
        "alone; the pipeline-wide alarm stayed OK"
        if delay is not None
        else "the per-account alarm did not page"
    )
    result.data.update(
        seconds_to_page=delay,
        named=sorted(named),
        pages=len(paged),
        pipeline_alarm_fired=pipeline_fired is not None,
        notes=notes,
        log_writes=log_writes,
        meta_check_exit=checked.returncode,
        meta_check=checked.stdout,
    )
    result.method = [
        f"Three WhatsApp Business Accounts deliver a signed message every {p.every:g} s each for {p.warm:g} s, and "
        "a fourth delivers once; then one of the three stops and the other two carry on until the alarm fires.",
        "The door notes accounts, the sweeper (every 5 s locally) counts the quiet ones as QuietAccounts, and its "
        "alarm (Maximum >= 1 over a 10 s period) publishes to the on-call topic, which delivers to the local inbox.",
        "Notes and log writes are the door role's calls in the runtime's IAM ledger.",
    ]
    result.caveats = [
        "The local clock is scaled: slots of 2 s stand for prod's hours, so the page comes seconds, not hours, "
        "after the silence; the arithmetic is the same (between quiet - note interval and quiet, plus a sweep).",
    ]
    result.seconds = time.monotonic() - started
    return result
