"""`lanectl`'s arguments: the commands, their options and how each value is checked. Parsing here
raises argparse's usage errors; ops/cli.py runs what was asked for."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ops.output import OUTPUTS, TEXT
from stacks.config.environments import ENVIRONMENTS

ENV_VARIABLE = "LANES_ENV"
DELEGATED = {
    "local": "run the whole pipeline on this machine",
    "demo": "a narrated scenario on the local runtime",
    "load": "signed webhooks at a set rate against this machine's API, with figures",
}
EXIT_CODES = """exit codes: 0 done; 1 a check or the work failed; 2 bad input (unknown env or lane, bad value);
3 AWS could not be asked (no credentials, no stack, endpoint down); 4 nothing to do (empty DLQ);
5 busy (a move task is already running); 6 could not check (Meta's Graph API: no token, token refused,
down, unknown account); 130 interrupted (what was done is kept and reported)"""


def _bounded_int(low: int, high: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be {low}..{high}, got {value}")
        return value

    return parse


def _fraction(what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        raw = text.strip()
        try:
            value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a fraction like 0.7 or 70%, got {text!r}") from None
        if not 0 < value <= 1:
            raise argparse.ArgumentTypeError(f"{what} must be above 0 and at most 1 (100%), got {text!r}")
        return value

    return parse


def _common(suppress: bool) -> argparse.ArgumentParser:
    """--env and where AWS is, accepted before the command and after it alike."""
    default: Any = argparse.SUPPRESS if suppress else None
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--env", default=default, help=f"environment: {', '.join(ENVIRONMENTS)} (or ${ENV_VARIABLE})")
    parser.add_argument(
        "--endpoint-url",
        default=default,
        help="AWS endpoint (or $LANES_ENDPOINT_URL); --env local defaults to http://127.0.0.1:5599",
    )
    parser.add_argument("--region", default=default, help="AWS region (default: the environment's, or $AWS_REGION)")
    parser.add_argument("--profile", default=default, help="AWS profile (default: $AWS_PROFILE)")
    return parser


def _output() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "--output", choices=OUTPUTS, default=TEXT, help="text (the default), or json: one document, for scripts"
    )
    return parser


def _window(parser: argparse.ArgumentParser, *, listing: bool) -> None:
    """The selection of rows from the raw log (ops/log_selection.py), as trace --tenant and replay take it."""
    from ops import log_selection

    parser.add_argument(
        "--since",
        metavar="WHEN",
        help="start of the window: ISO 8601 (2026-05-01T10:00Z), epoch seconds, or a time ago (90s, 15m, 2h, 7d)",
    )
    parser.add_argument("--until", metavar="WHEN", help="end of the window (default: now), as --since")
    if not listing:
        parser.add_argument("--tenant", help="only this tenant's rows")
    parser.add_argument(
        "--lane",
        help="only rows of this lane"
        + ("; with a dead letter's message id: search only this lane's DLQ" if listing else ""),
    )
    parser.add_argument("--kind", help="only rows of this kind (whatsapp.messages, import.page, ...)")
    parser.add_argument(
        "--status",
        action="append",
        default=[],
        choices=log_selection.STATUSES,
        help="only rows in this status (repeatable)",
    )
    parser.add_argument(
        "--source", choices=log_selection.SOURCES, help="only webhook deliveries, or only jobs (default: both)"
    )
    parser.add_argument(
        "--segments",
        type=_bounded_int(1, log_selection.MAX_SEGMENTS, "--segments"),
        default=log_selection.DEFAULT_SEGMENTS,
        help=f"parallel scan segments (1..{log_selection.MAX_SEGMENTS}, default {log_selection.DEFAULT_SEGMENTS})",
    )


def build_parser() -> argparse.ArgumentParser:
    from ops.commands import lanes, redrive

    common = _common(suppress=True)
    output = _output()
    parser = argparse.ArgumentParser(
        prog="lanectl",
        description="Operate the lanes pipeline: dead letters, lanes, capacity, deploy checks, local runtime.",
        epilog=EXIT_CODES,
        parents=[_common(suppress=False)],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dlq = commands.add_parser("dlq", help="dead-letter queues: list, peek, redrive").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    dlq.add_parser("list", parents=[common, output], help="every lane's DLQ with its depth and oldest age")
    peek = dlq.add_parser(
        "peek", parents=[common, output], help="dead-lettered messages and why (puts them back at once)"
    )
    peek.add_argument("lane")
    peek.add_argument("-n", type=_bounded_int(1, 100, "-n"), default=10, help="how many (1..100, default 10)")
    move = dlq.add_parser("redrive", parents=[common], help="move dead letters back to their lane, paced")
    move.add_argument("lane")
    move.add_argument(
        "--rate",
        type=_bounded_int(1, redrive.MAX_RATE, "--rate"),
        default=redrive.DEFAULT_RATE,
        help=f"messages per second (1..{redrive.MAX_RATE}, default {redrive.DEFAULT_RATE})",
    )
    move.add_argument("--dry-run", action="store_true", help="show what would move; move nothing")
    move.add_argument("--tenant", help="move only this tenant's messages (a paced move)")

    lane = commands.add_parser("lane", help="pause or resume a lane's consumer").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    lane.add_parser("pause", parents=[common], help="disable the lane's event source mapping").add_argument("lane")
    resume = lane.add_parser("resume", parents=[common], help="enable it again, optionally ramping concurrency")
    resume.add_argument("lane")
    resume.add_argument(
        "--ramp",
        type=lanes.duration_argument,
        metavar="DURATION",
        help="raise MaximumConcurrency from 2 to the catalogue's value over this long (90s, 5m)",
    )

    replies = commands.add_parser(
        "auto-reply", help="turn the model's own replies off or on, for a tenant or one conversation"
    ).add_subparsers(dest="action", required=True, metavar="ACTION")
    for word, text in (("off", "stop auto-replies"), ("on", "let auto-replies go out again (and clear an opt-out)")):
        switch = replies.add_parser(word, parents=[common], help=text)
        switch.add_argument("--tenant", required=True, help="a tenant with auto-reply in the environment's config")
        switch.add_argument(
            "--conversation", metavar="ID", help="only this customer (their id as Meta sends it); default: the tenant"
        )

    erase = commands.add_parser(
        "erase", parents=[common], help="erase everything about one person; prints a confirmation code"
    )
    who = erase.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--sender",
        help="an id the pipeline stores: a WhatsApp phone number in international form (+44 7700 900123) "
        "or business-scoped user id (US.13491208655302741918), or a Messenger page-scoped, Instagram-scoped "
        "or comment author's id",
    )
    who.add_argument(
        "--app-scoped-id",
        help="the app-scoped id Meta's callback names a person by: erased with every id linked to it "
        "(refused when none is)",
    )
    who.add_argument("--sender-hash", help="the person's hash, from an earlier erasure's job row")
    who.add_argument("--status", metavar="CODE", help="show the status of an erasure by its confirmation code")
    who.add_argument(
        "--link",
        metavar="APP_SCOPED_ID",
        help="link an app-scoped id to the ids (--to) the pipeline stores for the same person; erases nothing",
    )
    erase.add_argument("--to", action="append", metavar="ID", help="with --link: an id to link (repeatable)")
    erase.add_argument(
        "--wait",
        type=_bounded_int(0, 900, "--wait"),
        default=60,
        help="seconds to wait for the erasure to finish (0..900, default 60)",
    )

    trace = commands.add_parser(
        "trace",
        parents=[common, output],
        help="one delivery's or job's path from its id, or a tenant's in a window (--tenant); reads only",
    )
    trace.add_argument(
        "id",
        nargs="?",
        help="a webhook log id (wh-<sha256>), a job id (job-<32 hex>), Meta's id of a message or comment, or a "
        "dead letter's SQS message id (as `lanectl dlq peek` shows it)",
    )
    trace.add_argument(
        "--show-personal", action="store_true", help="show who each unit is from and its text (personal data)"
    )
    trace.add_argument(
        "--tenant",
        help="list this tenant's deliveries and jobs in the window (--since, --until); with Meta's id, search only "
        "this tenant's",
    )
    _window(trace, listing=True)
    trace.add_argument(
        "--limit", type=_bounded_int(1, 100_000, "--limit"), default=200, help="rows to show (default 200)"
    )

    _replay_parser(commands, common)
    _meta_parser(commands, common, output)

    plan = commands.add_parser("plan", parents=[common, output], help="capacity, queue bounds and monthly cost")
    plan.add_argument("environment", nargs="?", metavar="ENV")
    plan.add_argument(
        "--utilisation",
        type=_fraction("--utilisation"),
        default=0.7,
        help="target utilisation of provisioned slots (default 0.7)",
    )
    plan.add_argument(
        "--average",
        type=_fraction("--average"),
        default=0.25,
        help="average traffic as a share of peak, for the monthly cost (default 0.25)",
    )
    plan.add_argument("--strict", action="store_true", help="exit 1 when there are warnings")

    preflight = commands.add_parser("preflight", parents=[common], help="checks to pass before a deploy")
    preflight.add_argument("environment", nargs="?", metavar="ENV")

    for name, text in DELEGATED.items():
        # Their own options are parsed by their module, so `lanectl local --help` shows them.
        commands.add_parser(name, parents=[common], add_help=False, help=text)
    return parser


def _replay_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    from ops.commands import lanes, replay

    again = commands.add_parser(
        "replay", parents=[common], help="re-process deliveries or jobs from the raw log after a fix, paced"
    )
    _window(again, listing=False)
    again.add_argument(
        "--generation",
        type=_bounded_int(1, 1_000_000, "--generation"),
        help="the replay's generation: above every earlier replay's since the fix; the same one again changes nothing",
    )
    again.add_argument(
        "--rate",
        type=_bounded_int(1, replay.MAX_RATE, "--rate"),
        default=replay.DEFAULT_RATE,
        help=f"messages per second (1..{replay.MAX_RATE}, default {replay.DEFAULT_RATE})",
    )
    again.add_argument(
        "--ramp",
        type=lanes.duration_argument,
        metavar="DURATION",
        default=0.0,
        help="reach --rate over this long (90s, 5m), from 2 a second in the steps a lane resumes by",
    )
    again.add_argument("--dry-run", action="store_true", help="say how many and what they cost; send nothing")
    again.add_argument(
        "--all", action="store_true", dest="everything", help="replay everything in the window (no other filter)"
    )


def _meta_parser(commands: Any, common: argparse.ArgumentParser, output: argparse.ArgumentParser) -> None:
    meta = commands.add_parser("meta", help="Meta's side: which fields each account is subscribed to").add_subparsers(
        dest="action", required=True, metavar="ACTION"
    )
    meta_check = meta.add_parser(
        "check",
        parents=[common, output],
        help="ask the Graph API what each known (or named) account is subscribed to; flag missing fields",
    )
    meta_check.add_argument("--page", action="append", metavar="ID", help="also check this Page (repeatable)")
    meta_check.add_argument(
        "--instagram", action="append", metavar="ID", help="also check this Instagram account (repeatable)"
    )
    meta_check.add_argument(
        "--waba", action="append", metavar="ID", help="also check this WhatsApp Business Account (repeatable)"
    )
    meta_check.add_argument(
        "--tenant", help="check only the assets the environment binds to this tenant (Environment.tenant_assets)"
    )
    meta_check.add_argument("--app-id", help="the app whose subscription counts, when several are subscribed")
    meta_check.add_argument(
        "--graph-url", help="the Graph API and version (default: the one the deployed pipeline sends through)"
    )
