"""What the webhook door's benchmarks feed it: the ingress function's environment, signed WhatsApp
deliveries as API Gateway events, and a handler built on stub clients that answer at once."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

REGION = "us-east-1"
SECRET = "bench-app-secret"


def door_environ() -> dict[str, str]:
    from stacks import runtime_env
    from stacks.config.environments import ENVIRONMENTS
    from stacks.runtime_env import Resources

    lanes = [lane.name for lane in ENVIRONMENTS["dev"].lanes]
    resources = Resources(
        webhook_table="webhook-log",
        jobs_table="jobs",
        state_table="state",
        data_table="data",
        queue_urls={name: f"https://sqs.{REGION}.amazonaws.com/123456789012/{name}" for name in lanes},
        dlq_urls={name: f"https://sqs.{REGION}.amazonaws.com/123456789012/{name}-dlq" for name in lanes},
        secret_arn=f"arn:aws:secretsmanager:{REGION}:123456789012:secret:meta",
        sender_key_arn=f"arn:aws:secretsmanager:{REGION}:123456789012:secret:sender-key",
    )
    return {**runtime_env.ingress(ENVIRONMENTS["dev"], resources, json.dumps), "AWS_REGION": REGION}


class _StubDynamoDB:
    def put_item(self, **_: Any) -> dict[str, Any]:
        return {}

    def transact_write_items(self, **_: Any) -> dict[str, Any]:
        return {}


class _StubSQS:
    def send_message(self, **_: Any) -> dict[str, Any]:
        return {"MessageId": "bench"}


class _StubSecrets:
    def get_secret_value(self, **_: Any) -> dict[str, Any]:
        return {
            "SecretString": json.dumps(
                {"app_secret": SECRET, "previous_app_secret": "", "verify_token": "t", "sender_hash_key": "k" * 64}
            )
        }


def message_body(index: int, text: str) -> bytes:
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102030405060",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550001111", "phone_number_id": "1234"},
                            "contacts": [{"profile": {"name": "Ana"}, "wa_id": "15551234567"}],
                            "messages": [
                                {
                                    "from": "15551234567",
                                    "id": f"wamid.bench{index}",
                                    "timestamp": str(1_700_000_000 + index),
                                    "type": "text",
                                    "text": {"body": text},
                                }
                            ],
                        },
                    }
                ],
            }
        ],
    }
    return json.dumps(payload, ensure_ascii=False).encode()


def delivery_events(count: int, text: str, secret: str = SECRET) -> list[dict[str, Any]]:
    from pipeline.domain.signature import sign

    events = []
    for index in range(count):
        raw = message_body(index, text)
        events.append(
            {
                "requestContext": {"http": {"method": "POST"}},
                "rawPath": "/webhooks/meta",
                "headers": {"content-type": "application/json", "x-hub-signature-256": sign(secret, raw)},
                "body": raw.decode(),
                "isBase64Encoded": False,
            }
        )
    return events


@contextmanager
def stdout_to_devnull() -> Iterator[None]:
    """Logs and EMF lines are part of the work; the terminal is not."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def stubbed_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    from pipeline.adapters.lane_queue import QueueSender
    from pipeline.adapters.observability import logger_for, metrics_for
    from pipeline.adapters.secrets import MetaSecretSource
    from pipeline.adapters.sender_key import SenderKey
    from pipeline.adapters.webhook_log import WebhookLog
    from pipeline.domain.webhook.door import WebhookDoorPorts
    from pipeline.handlers import ingress

    environ = door_environ()
    ports = WebhookDoorPorts(
        secrets=MetaSecretSource(_StubSecrets(), "arn", time.time),
        log=WebhookLog(_StubDynamoDB(), "webhook-log"),
        queue=QueueSender(_StubSQS()),
        senders=SenderKey(_StubSecrets(), "arn"),
    )
    return ingress.build_handler(
        ingress.IngressConfig.from_environ(environ),
        ports,
        logger_for(environ, ingress.SERVICE),
        metrics_for(environ, ingress.SERVICE),
    )
