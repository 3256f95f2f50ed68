"""`lanectl`: the operator's command line. Every command takes `--env`; output is plain text off a
terminal (drawn with rich on one), and `--output json` where scripts read it; bad input exits
non-zero with a message that says what to do instead.

  lanectl dlq list|peek|redrive     what is dead-lettered, why, and putting it back (paced)
  lanectl lane pause|resume         stop a lane's consumer, and bring it back (optionally ramped)
  lanectl trace ID | --tenant T     one delivery's or job's path; a tenant's in a window
  lanectl replay --since … FILTER   re-process rows of the raw log after a fix, paced, once per generation
  lanectl auto-reply off|on         stop or restart the model's own replies (a tenant, or one conversation)
  lanectl erase --sender ID         erase one person (Meta's data-deletion callback, for on-call)
  lanectl erase --link ASID --to ID link an app-scoped id to an id the pipeline stores
  lanectl meta check                which fields each Meta account is subscribed to, and what is missing
  lanectl plan ENV                  capacity, queue bounds and cost from the catalogue
  lanectl preflight ENV             what would make a deploy fail
  lanectl local | demo              the pipeline on this machine (see ops/commands/local.py, ops/demo/run.py)
  lanectl load                      signed webhooks at a set rate, with figures (see ops/load/command.py)

The commands and their options are declared in ops/cli_parser.py; this module runs them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)

from local_aws.iam import ledger
from ops import errors
from ops.aws import Aws, Target, describe_error, target
from ops.cli_parser import DELEGATED, ENV_VARIABLE, build_parser
from ops.context import Context
from ops.errors import OpsError
from ops.log_selection import SOURCES, Selection, selection
from ops.output import Console
from stacks.config.environments import Environment, UnknownEnvironment, get_environment


@dataclass
class Runtime:
    """What the CLI takes from the process; tests give their own."""

    console: Console = field(default_factory=Console)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    aws: Callable[[Target], Aws] = Aws


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
    from ops.commands import dlq, erase, lanes, preflight, redrive
    from ops.cost import plan

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
    if args.command == "trace":
        return _trace(args, ctx)
    if args.command in ("replay", "meta", "auto-reply"):
        return _replay_or_meta(args, ctx)
    if args.command == "erase":
        if args.status is not None:
            return erase.status(ctx, args.status)
        if args.link is not None:
            return erase.link(ctx, app_scoped_id=args.link, to=args.to)
        if args.to:
            raise OpsError("--to goes with --link", errors.USAGE)
        return erase.erase(
            ctx,
            sender=args.sender,
            sender_hash=args.sender_hash,
            app_scoped_id=args.app_scoped_id,
            wait_seconds=args.wait,
        )
    if args.command == "dlq":
        if args.action == "list":
            return dlq.list_dlqs(ctx, output=args.output)
        if args.action == "peek":
            return dlq.peek_dlq(ctx, args.lane, args.n, output=args.output)
        return redrive.redrive(ctx, args.lane, rate=args.rate, dry_run=args.dry_run, tenant=args.tenant)
    if args.action == "pause":
        return lanes.pause(ctx, args.lane)
    return lanes.resume(ctx, args.lane, args.ramp)


def _replay_or_meta(args: argparse.Namespace, ctx: Context) -> int:
    from ops.commands import auto_reply, meta, replay

    if args.command == "auto-reply":
        return auto_reply.switch(ctx, args.tenant, args.conversation, on=args.action == "on")
    if args.command == "replay":
        return replay.replay(
            ctx,
            _selection(args, ctx),
            generation=args.generation,
            rate=args.rate,
            ramp_seconds=args.ramp,
            dry_run=args.dry_run,
            everything=args.everything,
            segments=args.segments,
        )
    return meta.check(
        ctx,
        pages=args.page,
        instagram=args.instagram,
        wabas=args.waba,
        app_id=args.app_id,
        graph_url=args.graph_url,
        output=args.output,
        tenant=args.tenant,
    )


def _trace(args: argparse.Namespace, ctx: Context) -> int:
    from ops.commands import trace, trace_window

    if args.id is not None and trace.is_meta_id(args.id):
        if args.kind or args.status or args.source or args.lane:
            raise OpsError("with Meta's id, only --tenant, --since and --until narrow the search", errors.USAGE)
        window = selection(
            now=ctx.clock(), since=args.since or "0", until=args.until, tenant=args.tenant, lanes=ctx.env.lane_names
        )
        return trace.trace(
            ctx, args.id, personal=args.show_personal, output=args.output, window=window, segments=args.segments
        )
    if args.tenant is None:
        if args.id is None:
            raise OpsError("give an id to trace, or --tenant T --since WHEN to list a tenant's", errors.USAGE)
        if args.since or args.until or args.kind or args.status or args.source:
            raise OpsError("--since, --until and the other filters go with --tenant, not with an id", errors.USAGE)
        return trace.trace(ctx, args.id, personal=args.show_personal, output=args.output, lane=args.lane)
    if args.id is not None:
        raise OpsError("give an id or --tenant, not both", errors.USAGE)
    return trace_window.list_window(
        ctx, _selection(args, ctx), output=args.output, limit=args.limit, segments=args.segments
    )


def _selection(args: argparse.Namespace, ctx: Context) -> Selection:
    return selection(
        now=ctx.clock(),
        since=args.since,
        until=args.until,
        tenant=args.tenant,
        lane=args.lane,
        lanes=ctx.env.lane_names,
        kind=args.kind,
        statuses=args.status,
        sources=(args.source,) if args.source else SOURCES,
        assets=ctx.env.tenant_assets,
    )


DELEGATE_MODULES = {"local": "ops.commands.local", "demo": "ops.demo.run", "load": "ops.load.command"}


def _delegate(name: str, args: argparse.Namespace, extra: Sequence[str], console: Console) -> int:
    """`local` and `demo` live in their own modules, imported only when asked for (they pull in the
    emulator and the CDK toolchain, which no other command needs)."""
    module_name = DELEGATE_MODULES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        module_path = module_name.replace(".", "/") + ".py"
        console.error(f"`lanectl {name}` is not available in this checkout ({module_path} is missing)")
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
    ledger_directory = runtime.environ.get(ledger.DIRECTORY_VARIABLE)
    if ledger_directory and args.command in DELEGATED:
        ledger.keep_in(ledger_directory)
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
