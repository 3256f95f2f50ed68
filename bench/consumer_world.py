"""The messages lane's consumer in moto, for the consumer bench: the deployed tables and queue, deliveries
logged as the ingress logs them, the event source mapping played until the queue is empty, and a
meter that counts what each DynamoDB write is for."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from typing import Any

from bench.mapping_player import drain
from bench.scenarios.message_text import varied_text

REGION = "us-east-1"
LANE = "messages"


@contextmanager
def fake_aws() -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        os.environ[name] = value
    from moto import mock_aws

    with mock_aws():
        yield


def _category(table: str, key: Mapping[str, Any]) -> str:
    if table in ("webhook-log", "jobs"):
        return "done-mark"
    if table == "data":
        return "effect"
    if table == "idempotency":
        return "idempotency"
    pk = key.get("pk", {}).get("S", "")
    for prefix, name in (
        ("quota#", "tenant quota"),
        ("dependency#", "dependency"),
        ("drain#", "drain count"),
        ("done#", "done-mark"),
        ("queued#", "jobs count"),
    ):
        if pk.startswith(prefix):
            return name
    return "other"


@dataclass
class World:
    environ: dict[str, str]
    queue_url: str
    dynamodb: Any
    sqs: Any
    esm_requests: int = 0

    def meter(self) -> tuple[Any, Any]:
        import boto3

        from bench.consumer_costs import Meter, Tables

        session = boto3.session.Session(region_name=REGION)
        meter = Meter(
            probe=self.dynamodb,
            tables=Tables(
                keys={
                    "webhook-log": ("id",),
                    "jobs": ("id",),
                    "state": ("pk",),
                    "data": ("pk", "sk"),
                    "idempotency": ("id",),
                },
                # The sparse pending index, and the sender index on the tasks' effects (erasure).
                indexed_by={"webhook-log": "pending_shard", "jobs": "pending_shard", "data": "sender_hash"},
            ),
            category=_category,
        )
        meter.attach(session.events)
        return session, meter

    def deliver(self, count: int, tenant_of: Callable[[int], str], copies: int = 1) -> None:
        """Log `count` deliveries the way the ingress does and put their messages on the lane."""
        from pipeline.adapters.webhook_log import LogEntry, WebhookLog
        from pipeline.domain.webhook import body as webhook_body
        from pipeline.domain.webhook import delivery as webhook
        from pipeline.domain.webhook.routing import Route

        log = WebhookLog(self.dynamodb, "webhook-log")
        now = time.time()
        for n in range(count):
            tenant = tenant_of(n)
            raw = json.dumps(
                {
                    "object": "whatsapp_business_account",
                    "entry": [
                        {
                            "id": tenant,
                            "changes": [
                                {
                                    "field": "messages",
                                    "value": {
                                        "messaging_product": "whatsapp",
                                        "messages": [
                                            {
                                                "from": "15550001",
                                                "id": f"wamid.{n:06d}",
                                                "timestamp": "1700000000",
                                                "type": "text",
                                                "text": {"body": varied_text(n, chosen["text_bytes"])},
                                            }
                                        ],
                                    },
                                }
                            ],
                        }
                    ],
                }
            ).encode()
            row_id = webhook.log_id(raw)
            route = Route(lane=LANE, tenant=tenant, kind="whatsapp.messages")
            log.record(
                LogEntry(
                    id=row_id, received_at=now, body=webhook_body.pack(raw), route=route, expires_at=int(now) + 86400
                )
            )
            envelope = webhook.envelope(row_id, route, webhook.parse(raw, 64), now)
            for _ in range(copies):
                self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=envelope.to_json(), MessageGroupId=tenant)

    def drain(self, handler: Callable[[dict[str, Any], Any], Any]) -> int:
        """Play the event source mapping until the queue is empty; returns the batches run."""

        def quiet(event: dict[str, Any], context: Any) -> Any:
            with redirect_stdout(io.StringIO()):  # log lines and EMF documents
                return handler(event, context)

        drained = drain(self.sqs, self.queue_url, f"arn:aws:sqs:{REGION}:000000000000:{LANE}", quiet)
        self.esm_requests += drained.requests
        return drained.batches


def make_world(lane_changes: Mapping[str, Any] | None = None) -> World:
    import boto3

    from ops.drive.lane_changes import changed_lane
    from stacks import runtime_env
    from stacks.config.environments import ENVIRONMENTS
    from tests.support.aws import deploy

    env = ENVIRONMENTS["local"]
    deployed = deploy(env)
    environ = {
        **runtime_env.consumer(env, env.lane(LANE), deployed.resources, json.dumps),
        "AWS_REGION": REGION,
        "LOG_LEVEL": "WARNING",
    }
    if lane_changes:
        environ["LANE"] = changed_lane(environ["LANE"], **lane_changes)
    return World(
        environ,
        deployed.resources.queue_urls[LANE],
        boto3.client("dynamodb", region_name=REGION),
        boto3.client("sqs", region_name=REGION),
    )


TEXT_BYTES = 1800
"""With the rest of the delivery, about the 2 KB WhatsApp text the cost targets are set at."""
chosen = {"text_bytes": TEXT_BYTES}
"""The length of each delivered message's text in this run (the bench's --text-bytes)."""
