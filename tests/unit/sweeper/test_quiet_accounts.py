"""Each sweep counts the source accounts that normally send and have gone quiet too long, and
publishes the count as one series (QuietAccounts) with a line naming them."""

from __future__ import annotations

import json

import boto3

from pipeline import metric_names, settings
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.domain.webhook.account_silence import Account
from tests.support.aws import REGION


def _quiet_counts(out: str) -> list[float]:
    values: list[float] = []
    for line in out.splitlines():
        if line.startswith('{"_aws"'):
            document = json.loads(line)
            if metric_names.QUIET_ACCOUNTS in document:
                values.extend(document[metric_names.QUIET_ACCOUNTS])
    return values


def _quiet_line(caplog) -> dict | None:
    for record in caplog.records:
        if record.getMessage() == "source accounts quiet":
            return record.__dict__
    return None


def _hear(notes: AccountsSeen, account: str, start: float, seconds: float, every: float) -> float:
    """`account` delivering every `every` seconds for `seconds` from `start`; when it last did."""
    at = start
    while at < start + seconds:
        notes.note([Account(account, "page")], at)
        at += every
    return at - every


def test_an_account_that_normally_sends_and_goes_quiet_is_counted_and_named(
    sweeper_environ, deployed, sweep, clock, capsys, caplog
):
    policy = settings.account_silence(sweeper_environ)
    notes = AccountsSeen(boto3.client("dynamodb", region_name=REGION), deployed.resources.accounts_table, policy)
    window = policy.slots * policy.slot_seconds
    # Given a steady account heard from every note interval through a whole window, then silent;
    # another steady one that keeps sending; and one heard from only once
    start = clock.now - policy.quiet_seconds - 1 - window
    _hear(notes, "steady-quiet", start, window, policy.note_seconds)
    _hear(notes, "steady-on", start, clock.now - start, policy.note_seconds)
    notes.note([Account("once", "whatsapp")], start)

    # When the sweeper runs
    report = sweep()

    # Then only the steady account that fell silent is counted, and the line names it alone
    out = capsys.readouterr().out
    assert _quiet_counts(out) == [1]
    line = _quiet_line(caplog)
    assert [q["account"] for q in line["quiet"]] == ["steady-quiet"]
    assert report["accounts"] == {"accounts": 3, "quiet": 1, "pages": 1}


def test_with_every_account_sending_the_count_is_zero_and_nothing_is_named(
    sweeper_environ, deployed, sweep, clock, capsys, caplog
):
    policy = settings.account_silence(sweeper_environ)
    notes = AccountsSeen(boto3.client("dynamodb", region_name=REGION), deployed.resources.accounts_table, policy)
    window = policy.slots * policy.slot_seconds
    _hear(notes, "steady", clock.now - window, window, policy.note_seconds)

    sweep()

    out = capsys.readouterr().out
    assert _quiet_counts(out) == [0]
    assert _quiet_line(caplog) is None


def test_unreadable_accounts_publish_no_count_and_the_sweep_still_runs(
    sweeper_environ, deployed, rows, queues, clock, capsys, caplog
):
    # Given the accounts table is gone (a refused read), and a lost row
    boto3.client("dynamodb", region_name=REGION).delete_table(TableName=deployed.resources.accounts_table)
    rows.webhook("wh-lost", age=3600)
    from pipeline.handlers.sweeper import create_handler

    # When the sweeper runs
    report = create_handler(sweeper_environ, clock=clock)({}, None)

    # Then no count is published (the alarm keeps its state), the failure is logged, and the row replayed
    out = capsys.readouterr().out
    assert _quiet_counts(out) == []
    assert "could not read the source accounts' last-seen items" in caplog.messages
    assert "accounts" not in report
    assert report["webhook"]["replayed"] == 1
