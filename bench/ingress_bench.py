"""The webhook door's costs: cold import, hot-path CPU, and AWS calls per delivery.

    .venv/bin/python -m bench.ingress_bench [--runs 7] [--deliveries 2000]

1. Cold start: importing the ingress handler and building it (which creates its three clients),
   as a ratio to `import boto3` plus creating the same three clients, each measured in fresh
   subprocesses in the same run (alternating, median of --runs).
2. Hot path: the handler's own time per delivery with the network excluded. The boto3 clients
   are replaced by stubs that answer at once, so everything of ours still runs: event parsing,
   HMAC, digest, JSON parsing and depth check, routing, gzip and item building, envelope JSON,
   logs and metrics (written to /dev/null).
3. AWS calls per delivery, counted with botocore hooks on the handler's clients against moto.

It prints figures and asserts nothing about time: figures vary with the machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.ingress_fixtures import REGION, delivery_events, door_environ, stdout_to_devnull, stubbed_handler

ROOT = Path(__file__).resolve().parent.parent
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}

_BASELINE = """
import time
t0 = time.perf_counter()
import boto3
from botocore.config import Config
config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=2, read_timeout=5,
                tcp_keepalive=True)
session = boto3.session.Session()  # region from AWS_DEFAULT_REGION, as Lambda sets it
for service in ("dynamodb", "sqs", "secretsmanager"):
    session.client(service, config=config)
print(time.perf_counter() - t0)
"""

_INGRESS = """
import json, sys, time
t0 = time.perf_counter()
from pipeline.handlers import ingress
t1 = time.perf_counter()
ingress.create_handler(json.loads(sys.argv[1]))
t2 = time.perf_counter()
print(t2 - t0, t1 - t0)
"""


def _child(code: str, *args: str) -> list[float]:
    env = {**os.environ, **FAKE_AWS, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'lambdas'}"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return [float(x) for x in out.split()]


def cold_start(runs: int) -> None:
    environ = json.dumps(door_environ())
    _child(_BASELINE)  # warm the OS file cache (and bytecode caches, where writable) for both sides
    _child(_INGRESS, environ)
    baseline, ingress, ingress_import = [], [], []
    for _ in range(runs):
        baseline.extend(_child(_BASELINE))
        total, imported = _child(_INGRESS, environ)
        ingress.append(total)
        ingress_import.append(imported)
    base, ours = statistics.median(baseline), statistics.median(ingress)
    print(f"cold start (median of {runs} fresh processes each)")
    print(f"  import boto3 + 3 clients        {base * 1000:7.1f} ms")
    print(f"  import ingress handler          {statistics.median(ingress_import) * 1000:7.1f} ms")
    print(f"  import + create_handler         {ours * 1000:7.1f} ms   (clients made; no AWS call)")
    print(f"  ratio to the boto3 baseline     {ours / base:7.2f} x")


def hot_path(deliveries: int) -> None:
    handler = stubbed_handler()
    cases = [
        ("one WhatsApp text message", deliveries, "where is my order? 📦"),
        ("16 KB delivery", max(50, deliveries // 4), "x" * 15_000),
        ("256 KB (gzipped, by reference)", max(20, deliveries // 40), "y" * 250_000),
        (
            "2 MB random text (split in parts)",
            max(5, deliveries // 200),
            base64.b64encode(os.urandom(1_500_000)).decode(),
        ),
    ]
    print("hot path, AWS calls stubbed out (per delivery)")
    for label, count, text in cases:
        events = delivery_events(count, text)
        timings = []
        with stdout_to_devnull():
            handler(events[0], None)  # the secret is read once per instance: outside the timing
            for event in events[1:]:
                started = time.perf_counter()
                response = handler(event, None)
                timings.append(time.perf_counter() - started)
                if response["statusCode"] != 200:
                    raise SystemExit(f"benchmark delivery answered {response['statusCode']}")
        timings.sort()
        median = statistics.median(timings)
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        size = len(events[1]["body"].encode())
        print(
            f"  {label:34s} {size / 1024:8.1f} KiB  median {median * 1e6:9.0f} us  p99 {p99 * 1e6:9.0f} us"
            f"  ({len(timings)} deliveries)"
        )


SECRET_CLOCK = 1_800_000_000.0
"""tests/support/aws.py dates the deployed Meta secret's previous secret from this instant."""


def aws_calls() -> None:
    import boto3
    from moto import mock_aws

    from pipeline.domain.signature import sign
    from pipeline.domain.webhook import delivery as webhook
    from pipeline.handlers import ingress
    from stacks import runtime_env
    from stacks.config.environments import ENVIRONMENTS
    from tests.support.aws import META_APP_SECRET, AwsCalls, deploy, handler_clients

    os.environ.update(FAKE_AWS)
    with mock_aws():
        env = ENVIRONMENTS["local"]
        deployed = deploy(env)
        environ = {**runtime_env.ingress(env, deployed.resources, json.dumps), "AWS_REGION": REGION}
        clients = handler_clients()
        calls = AwsCalls().watch(clients.dynamodb, clients.sqs, clients.secretsmanager)
        # The clock the deployed secret is dated for (its previous secret is in force then): with
        # the wall clock that secret is refused as misconfigured and nothing past it is counted.
        handler = ingress.create_handler(environ, clients=clients, clock=lambda: SECRET_CLOCK)
        first, second = delivery_events(2, "hello", secret=META_APP_SECRET)
        [split] = delivery_events(1, base64.b64encode(os.urandom(600_000)).decode(), secret=META_APP_SECRET)
        unparseable = dict(
            first, body="{not json", headers={"x-hub-signature-256": sign(META_APP_SECRET, b"{not json")}
        )
        forged = dict(first, headers={"x-hub-signature-256": "sha256=" + "0" * 64})

        def deliver(label: str, event: dict[str, Any]) -> None:
            calls.reset()
            with stdout_to_devnull():
                handler(event, None)
            print(f"  {label:36s} {len(calls.calls)}  {', '.join(calls.calls) or '-'}")

        print("AWS calls per delivery (botocore hooks on the handler's clients, against moto)")
        deliver("first delivery of an instance", first)
        deliver("new delivery (the hot path)", second)
        deliver("redelivery, row still pending", second)
        boto3.client("dynamodb", region_name=REGION).update_item(  # what a consumer does when it finishes
            TableName=deployed.resources.webhook_table,
            Key={"id": {"S": webhook.log_id(second["body"].encode())}},
            UpdateExpression="SET #s = :done REMOVE pending_shard",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": {"S": "done"}},
        )
        deliver("redelivery, row done", second)
        deliver("unparseable body", unparseable)
        deliver("body split across items (~800 KB)", split)
        deliver("bad signature", forged)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per cold-start measurement")
    parser.add_argument("--deliveries", type=int, default=2000, help="deliveries timed on the hot path")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(ROOT / "lambdas")]
    print(f"python {sys.version.split()[0]} on {sys.platform}\n")
    cold_start(args.runs)
    print()
    hot_path(args.deliveries)
    print()
    aws_calls()


if __name__ == "__main__":
    main()
