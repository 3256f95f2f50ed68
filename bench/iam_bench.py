"""What playing AWS's authorisation costs a call: the same calls signed by a function's role (each
judged against its policies and the resource's) and by the runtime's own credentials (waved
through), alternating in one process, on the emulator the local runtime uses.

    python -m bench.iam_bench [--calls N] [--rounds R]

Prints, per call, the median of R rounds of N calls each way and the difference: the enforcement's
cost once its decisions are cached (a role makes the same few asks all day), and the cost of a
first, uncached decision.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"


def _world() -> tuple[Any, Any, Callable[[], None]]:
    import boto3

    from local_aws.iam.enforcer import ENFORCER
    from local_aws.iam.template import read_grants
    from local_aws.intrinsics import Resolver

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="log",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )
    boto3.client("sqs", region_name=REGION).create_queue(QueueName="lane")
    arn = {"Log": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/log", "Lane": f"arn:aws:sqs:{REGION}:{ACCOUNT}:lane"}
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": ["dynamodb:PutItem"], "Resource": {"Fn::GetAtt": ["Log", "Arn"]}},
            {"Effect": "Allow", "Action": ["sqs:SendMessage"], "Resource": {"Fn::GetAtt": ["Lane", "Arn"]}},
        ]
    }
    template = {
        "Resources": {
            "Log": {"Type": "AWS::DynamoDB::Table"},
            "Lane": {"Type": "AWS::SQS::Queue"},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Policy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {"PolicyDocument": policy, "Roles": [{"Ref": "Role"}]},
            },
        }
    }
    resolver = Resolver(
        ref=lambda logical: "role" if logical == "Role" else logical.lower(),
        get_att=lambda logical, attribute: arn.get(logical, f"arn:aws:iam::{ACCOUNT}:role/role"),
        pseudo={},
        parameters={},
    )
    grants = read_grants(template, resolver, account=ACCOUNT, region=REGION)
    ENFORCER.register(grants)
    keys = ENFORCER.assume(f"arn:aws:iam::{ACCOUNT}:role/role", "bench")
    role = boto3.session.Session(
        region_name=REGION,
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        aws_session_token=keys.session_token,
    )
    admin = boto3.session.Session(region_name=REGION)
    return role, admin, lambda: ENFORCER.unregister(grants)


def _per_call(client_call: Callable[[int], None], calls: int) -> float:
    started = time.perf_counter()
    for n in range(calls):
        client_call(n)
    return (time.perf_counter() - started) / calls * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.iam_bench", description=__doc__)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": REGION})
    from moto import mock_aws

    from local_aws import moto_patches, sdk_models
    from local_aws.iam.enforcer import ENFORCER

    moto_patches.install()
    sdk_models.share()
    with mock_aws():
        role_session, admin_session, done = _world()
        url = admin_session.client("sqs").get_queue_url(QueueName="lane")["QueueUrl"]
        for kind in ("put", "send"):
            clients = {"role": role_session, "admin": admin_session}
            made = {name: (s.client("dynamodb") if kind == "put" else s.client("sqs")) for name, s in clients.items()}

            def call(name: str, n: int, made: dict[str, Any] = made, kind: str = kind) -> None:
                if kind == "put":
                    made[name].put_item(TableName="log", Item={"id": {"S": f"{name}-{n}"}})
                else:
                    made[name].send_message(QueueUrl=url, MessageBody="x")

            times: dict[str, list[float]] = {"role": [], "admin": []}
            for _ in range(args.rounds):
                for name in ("role", "admin"):
                    times[name].append(_per_call(lambda n, name=name: call(name, n), args.calls))
            role, admin = statistics.median(times["role"]), statistics.median(times["admin"])
            label = "PutItem" if kind == "put" else "SendMessage"
            print(f"{label:12} role {role:7.1f} us  runtime's own {admin:7.1f} us  {role - admin:+6.1f} us/call")
        ask_started = time.perf_counter()
        uncached = 2000
        from local_aws.iam.asks import Ask

        found = ENFORCER.session(role_session.get_credentials().access_key)
        assert found is not None
        session, grants = found
        for _ in range(uncached):
            ENFORCER._cache.clear()
            ENFORCER.decide(session, Ask("dynamodb:PutItem", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/log"), grants)
        print(f"one uncached decision: {(time.perf_counter() - ask_started) / uncached * 1e6:.1f} us")
        done()


if __name__ == "__main__":
    main()
