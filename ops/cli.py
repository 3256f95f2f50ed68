"""`lanectl`: the operator's command line. Every command takes `--env`; output is plain text off a
terminal (drawn with rich on one), and `--output json` where scripts read it; bad input exits
non-zero with a message that says what to do instead.

  lanectl dlq list|peek|redrive     what is dead-lettered, why, and putting it back (paced)
  lanectl lane pause|resume         stop a lane's consumer, and bring it back (optionally ramped)
  lanectl erase --sender ID         erase one person (Meta's data-deletion callback, for on-call)
  lanectl plan ENV                  capacity, queue bounds and cost from the catalogue
  lanectl preflight ENV             what would make a deploy fail
  lanectl local | demo              the pipeline on this machine (see ops/local.py, ops/demo.py)
  lanectl load                      signed webhooks at a set rate, with figures (see ops/load.py)
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)

from ops import errors
from ops.aws import Aws, Target, describe_error, target
from ops.context import Context
from ops.errors import OpsError
from ops.output import OUTPUTS, TEXT, Console
from stacks.config.environments import ENVIRONMENTS, Environment, UnknownEnvironment, get_environment

ENV_VARIABLE = "LANES_ENV"
DELEGATED = {
    "local": "run the whole pipeline on this machine",
    "demo": "a narrated scenario on the local runtime",
    "load": "signed webhooks at a set rate against this machine's API, with figures",
}
EXIT_CODES = """exit codes: 0 done; 1 a check or the work failed; 2 bad input (unknown env or lane, bad value);
3 AWS could not be asked (no credentials, no stack, endpoint down); 4 nothing to do (empty DLQ);
5 busy (a move task is already running); 130 interrupted (what was done is kept and reported)"""


@dataclass
class Runtime:
    """What the CLI takes from the process; tests give their own."""

    console: Console = field(default_factory=Console)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    aws: Callable[[Target], Aws] = Aws


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


def build_parser() -> argparse.ArgumentParser:
    from ops import lanes, redrive

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

    erase = commands.add_parser(
        "erase", parents=[common], help="erase everything about one person; prints a confirmation code"
    )
    who = erase.add_mutually_exclusive_group(required=True)
    who.add_argument("--sender", help="a phone number in international form (+44 7700 900123) or a Meta id")
    who.add_argument("--sender-hash", help="the person's hash, from an earlier erasure's job row")
    who.add_argument("--status", metavar="CODE", help="show the status of an erasure by its confirmation code")
    erase.add_argument(
        "--wait",
        type=_bounded_int(0, 900, "--wait"),
        default=60,
        help="seconds to wait for the erasure to finish (0..900, default 60)",
    )

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


def _environment(args: argparse.Namespace, environ: Mapping[str, str]) -> Environment:
    flag = getattr(args, "env", None)
    positional = getattr(args, "environment", None)
    if flag and positional and flag != positional:
        raise OpsError(f"two environments given: {positional!r} and --env {flag!r}", errors.USAGE)
    name = positional or flag or environ.get(ENV_VARIABLE)
    try:
        return get_environment(name)
    except UnknownEnvironment as exc:
        raise OpsError(str(exc).replace("pass -c env=<name>", "pass --env"), errors.USAGE) from None


def _context(args: argparse.Namespace, env: Environment, runtime: Runtime) -> Context:
    chosen = target(
        env, endpoint_url=args.endpoint_url, region=args.region, profile=args.profile, environ=runtime.environ
    )
    return Context(
        env=env,
        target=chosen,
        aws=runtime.aws(chosen),
        console=runtime.console,
        clock=runtime.clock,
        sleep=runtime.sleep,
    )


def _dispatch(args: argparse.Namespace, runtime: Runtime) -> int:
    from ops import dlq, erase, lanes, plan, preflight, redrive

    env = _environment(args, runtime.environ)
    if args.command == "plan":
        return plan.run_plan(
            env,
            runtime.console,
            utilisation=args.utilisation,
            average_fraction=args.average,
            strict=args.strict,
            output=args.output,
        )
    ctx = _context(args, env, runtime)
    if args.command == "preflight":
        return preflight.run_preflight(ctx)
    if args.command == "erase":
        if args.status is not None:
            return erase.status(ctx, args.status)
        return erase.erase(ctx, sender=args.sender, sender_hash=args.sender_hash, wait_seconds=args.wait)
    if args.command == "dlq":
        if args.action == "list":
            return dlq.list_dlqs(ctx, output=args.output)
        if args.action == "peek":
            return dlq.peek_dlq(ctx, args.lane, args.n, output=args.output)
        return redrive.redrive(ctx, args.lane, rate=args.rate, dry_run=args.dry_run, tenant=args.tenant)
    if args.action == "pause":
        return lanes.pause(ctx, args.lane)
    return lanes.resume(ctx, args.lane, args.ramp)


def _delegate(name: str, args: argparse.Namespace, extra: Sequence[str], console: Console) -> int:
    """`local` and `demo` live in their own modules, imported only when asked for (they pull in the
    emulator and the CDK toolchain, which no other command needs)."""
    module_name = f"ops.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        console.error(f"`lanectl {name}` is not available in this checkout (ops/{name}.py is missing)")
        return errors.USAGE
    parser = argparse.ArgumentParser(prog=f"lanectl {name}", description=DELEGATED[name])
    add_arguments = getattr(module, "add_arguments", None)
    if add_arguments is not None:
        add_arguments(parser)
    try:
        parsed = parser.parse_args(list(extra), namespace=args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return int(module.main(parsed) or 0)


def _aws_problem(exc: Exception, args: argparse.Namespace) -> str:
    if isinstance(exc, NoCredentialsError):
        return "no AWS credentials found: set AWS_PROFILE (or pass --profile), or export AWS_ACCESS_KEY_ID"
    if isinstance(exc, NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION"
    if isinstance(exc, EndpointConnectionError):
        hint = "; is `lanectl local` running?" if getattr(args, "env", None) == "local" else ""
        return f"cannot reach {exc.kwargs.get('endpoint_url', 'the AWS endpoint')}{hint}"
    if isinstance(exc, ClientError):
        return f"AWS refused {exc.operation_name}: {describe_error(exc)}"
    return f"AWS call failed: {describe_error(exc)}"


def run(argv: Sequence[str], runtime: Runtime) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(list(argv))
        if extra and args.command not in DELEGATED:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse has printed the usage and the reason
        return int(exc.code or 0)
    console = runtime.console
    try:
        if args.command in DELEGATED:
            return _delegate(args.command, args, extra, console)
        return _dispatch(args, runtime)
    except OpsError as exc:
        console.error(exc.message)
        return exc.code
    except (BotoCoreError, ClientError) as exc:
        console.error(_aws_problem(exc, args))
        return errors.AWS
    except KeyboardInterrupt:
        console.error("interrupted")
        return errors.INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    return run(sys.argv[1:] if argv is None else argv, Runtime())


if __name__ == "__main__":
    sys.exit(main())
