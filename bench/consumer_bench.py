"""What a processed message costs the consumer in DynamoDB write units and SQS requests.

    .venv/bin/python -m bench.consumer_bench [--messages 200]

The job: the messages lane at batch size 10, each message a logged WhatsApp delivery carrying one
inbound message (sent inline, as the ingress sends small bodies). Doing it means storing the
message (the effect) and marking its webhook-log row done, which also takes the row out of the
pending index. Measured against moto with botocore hooks (see bench/consumer_costs.py), for:

1. this consumer, with the batch's ten records from one tenant, and from ten tenants (the tenant
   quota costs one update to take and one to give back per tenant per batch);
2. the design's minimum: the effect and its done-mark in one TransactWriteItems, nothing else;
3. Powertools' BatchProcessor with its idempotency utility (DynamoDBPersistenceLayer) doing the
   same job.

Then what the cheap paths cost this consumer: a redelivered (already done) message, and a record
deferred by its tenant's quota. SQS requests made by the event source mapping (one ReceiveMessage
and one DeleteMessageBatch per batch) are shown apart from the consumer's own. Figures only; no
timing, nothing asserted.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.consumer_world import LANE, REGION, TEXT_BYTES, chosen, fake_aws, make_world
from bench.mapping_player import BATCH


@dataclass
class Figures:
    name: str
    messages: int
    meter: Any
    esm_requests: int

    def per(self, value: float) -> float:
        return value / self.messages

    @property
    def wcu(self) -> float:
        return self.per(sum(self.meter.wcu.values()))


def _ours(messages: int, tenant_of: Callable[[int], str], name: str) -> Figures:
    from pipeline.adapters.clients import Clients
    from pipeline.handlers.consumer import create_handler

    with fake_aws():
        world = make_world()
        world.deliver(messages, tenant_of)
        session, meter = world.meter()
        world.drain(create_handler(world.environ, clients=Clients(region=REGION, _session=session)))
        return Figures(name, messages, meter, world.esm_requests)


def _powertools(messages: int) -> Figures:
    from bench.consumer_powertools import create_idempotency_table, make_handler, store_message

    with fake_aws():
        world = make_world()
        create_idempotency_table(world.dynamodb)
        world.deliver(messages, lambda n: f"waba-{n // BATCH}")
        session, meter = world.meter()
        client = session.client("dynamodb")

        def task(envelope: dict[str, Any]) -> dict[str, Any]:
            [message] = envelope["payload"]["entry"][0]["changes"][0]["value"]["messages"]
            store_message(client, "data", f"msg#{envelope['tenant']}#{message['id']}", message)
            client.update_item(
                TableName="webhook-log",
                Key={"id": {"S": envelope["id"]}},
                UpdateExpression="SET #s = :done, updated_at = :now REMOVE pending_shard",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":done": {"S": "done"}, ":now": {"N": str(time.time())}},
            )
            return {"stored": 1}

        world.drain(make_handler(client, task))
        return Figures("Powertools idempotency + BatchProcessor", messages, meter, world.esm_requests)


def _cheap_paths(messages: int) -> tuple[Figures, Figures]:
    """(redeliveries of finished work, a flooded tenant's records) for this consumer."""
    from pipeline.adapters.clients import Clients
    from pipeline.handlers.consumer import create_handler

    with fake_aws():
        world = make_world()
        world.deliver(messages, lambda n: f"waba-{n // BATCH}")
        world.drain(create_handler(world.environ))
        world.esm_requests = 0
        world.deliver(messages, lambda n: f"waba-{n // BATCH}")  # the same bodies: Meta retrying
        session, again = world.meter()
        world.drain(create_handler(world.environ, clients=Clients(region=REGION, _session=session)))
        repeat = Figures("redelivered (already done)", messages, again, world.esm_requests)
    with fake_aws():
        # A tenant whose whole quota is held by other consumers: every record of each batch is
        # deferred, so everything metered is the price of deferring.
        from pipeline.adapters.leases import LeaseBudgets
        from pipeline.domain.dependencies import budgets
        from pipeline.settings.lane_policy import TenantQuota

        # The messages lane has no cap (nothing it calls has a per-tenant limit): give it one here,
        # to price the path a capped lane's flood takes.
        quota = 4
        world = make_world({"defer_seconds": 30, "tenant_quota": TenantQuota(quota, "a partner's per-tenant limit")})
        held = budgets.tenant_quota(LANE, "waba-flood", quota, "enforce")
        LeaseBudgets(world.dynamodb, "state", time.time).acquire(held, quota, hold_seconds=600)
        world.deliver(messages, lambda n: "waba-flood")
        session, flood = world.meter()
        world.drain(create_handler(world.environ, clients=Clients(region=REGION, _session=session)))
        deferred = Figures("deferred by the tenant quota", messages, flood, world.esm_requests)
    return repeat, deferred


def _print(rows: list[Figures], minimum: Figures) -> None:
    header = f"{'per processed message':<44}{'WCU':>7}{'writes':>8}{'RCU':>7}{'reads':>7}{'SQS own':>9}{'SQS ESM':>9}"
    print(header)
    print("-" * len(header))
    for row in rows:
        m = row.meter
        print(
            f"{row.name:<44}{row.wcu:>7.2f}{row.per(m.write_requests()):>8.2f}{row.per(m.rcu):>7.2f}"
            f"{row.per(m.read_requests()):>7.2f}{row.per(m.sqs_requests()):>9.2f}{row.per(row.esm_requests):>9.2f}"
        )
    effect = minimum.per(minimum.meter.wcu["effect"] + minimum.meter.wcu["done-mark"] + minimum.meter.wcu["GSI"])
    print(
        f"{'design minimum: the effect as its done-mark':<44}{effect:>7.2f}{1.0:>8.2f}{'':>7}{'':>7}"
        f"{0.0:>9.2f}{minimum.per(minimum.esm_requests):>9.2f}"
    )


def _breakdown(rows: list[Figures]) -> None:
    print("\nWCU per processed message, by what the write is for")
    names = sorted({name for row in rows for name in row.meter.wcu})
    print(f"{'':<44}" + "".join(f"{name:>13}" for name in names))
    for row in rows:
        print(f"{row.name:<44}" + "".join(f"{row.per(row.meter.wcu[name]):>13.2f}" for name in names))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100, help="messages per scenario (a multiple of 10)")
    parser.add_argument("--text-bytes", type=int, default=TEXT_BYTES, help="length of each message's text")
    args = parser.parse_args(argv)
    chosen["text_bytes"] = args.text_bytes
    # Powertools asks for the Lambda context to bound in-progress records; there is none here.
    warnings.filterwarnings("ignore", message="Couldn't determine the remaining time left")
    messages = max(BATCH, args.messages // BATCH * BATCH)

    one_tenant = _ours(messages, lambda n: f"waba-{n // BATCH}", "this consumer, 1 tenant per batch")
    ten_tenants = _ours(messages, lambda n: f"waba-{n % BATCH}", "this consumer, 10 tenants per batch")
    powertools = _powertools(messages)
    repeat, deferred = _cheap_paths(messages)

    print(f"\nConsumer costs: {messages} messages per scenario, batch size {BATCH}, messages lane (moto)\n")
    _print([one_tenant, ten_tenants, powertools], one_tenant)
    _breakdown([one_tenant, ten_tenants, powertools])
    print("\nThe cheap paths of this consumer (per message on that path)")
    header = f"{'':<44}{'WCU':>7}{'writes':>8}{'RCU':>7}{'reads':>7}{'SQS own':>9}{'SQS ESM':>9}"
    print(header)
    for row in (repeat, deferred):
        m = row.meter
        print(
            f"{row.name:<44}{row.wcu:>7.2f}{row.per(m.write_requests()):>8.2f}{row.per(m.rcu):>7.2f}"
            f"{row.per(m.read_requests()):>7.2f}{row.per(m.sqs_requests()):>9.2f}{row.per(row.esm_requests):>9.2f}"
        )
    print(
        "\nWCU: on-demand write units (a transactional write costs two per KB per item; a GSI entry added or"
        "\nremoved costs one). SQS own: requests the consumer makes; SQS ESM: the event source mapping's"
        "\nReceiveMessage and DeleteMessageBatch (plus one empty receive at the end of each run)."
    )


if __name__ == "__main__":
    main()
