"""One running pipeline as its users and operators see it: its doors (an HTTP client signed as Meta
and as a producer), what an operator reads (tables, queues, alarms, metrics, log lines), what an
operator changes (changes.py), and `lanectl` against it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from ops.drive.changes import Changes
from ops.drive.lanectl import lanectl
from ops.drive.log_lines import LineLog


class Session(Changes):
    def __init__(self, runtime: Any) -> None:
        from local_aws.client import PipelineClient

        super().__init__(runtime)
        self.log = LineLog()
        runtime.capture.add_sink(self.log.sink)
        secret = json.loads(
            self.aws("secretsmanager").get_secret_value(SecretId=self.outputs["MetaSecretArn"])["SecretString"]
        )
        self.verify_token: str = secret["verify_token"]
        self.client = PipelineClient(runtime.api_url, app_secret=secret["app_secret"])
        self.started = time.time()
        self._sender_key: Any = None

    def lanectl(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`lanectl --env local ARGS` in a process of its own (the session must serve its emulator:
        `Harness.session(cli=True)`)."""
        if self.runtime.aws_endpoint is None:
            raise RuntimeError("lanectl needs the emulator on a port: start the session with cli=True")
        return lanectl(self.runtime.aws_endpoint, "--env", "local", *args, timeout=timeout)

    # ------------------------------------------------------------------ queues

    def depth(self, lane: str, *, dlq: bool = False) -> Any:
        """Visible, in flight, delayed and the oldest message's age, read from the emulator's queue
        the way CloudWatch reads SQS (no receive)."""
        from local_aws.queue_metrics import sample

        return sample(self.queue_url(lane, dlq=dlq).rsplit("/", 1)[1])

    def total_depth(self, lane: str) -> int:
        d = self.depth(lane)
        return int(d.visible + d.in_flight + d.delayed)

    def lanes_empty(self, *lanes: str) -> bool:
        return all(self.total_depth(lane) == 0 for lane in lanes)

    def oldest_dead_letter_sent(self, lane: str) -> float | None:
        """When the oldest message now in the lane's DLQ was sent there (epoch seconds), from the
        queue's age of oldest message; None when the DLQ is empty."""
        d = self.depth(lane, dlq=True)
        if d.visible + d.in_flight + d.delayed == 0:
            return None
        return time.time() - d.oldest_age_seconds

    # ------------------------------------------------------------------ tables

    def items(self, pk: str) -> list[dict[str, Any]]:
        """The data table's items under one partition key, as plain values."""
        from pipeline.adapters.items import from_item, to_item

        response = self.aws("dynamodb").query(
            TableName=self.outputs["DataTableName"],
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": pk}),
            ConsistentRead=True,
        )
        return [from_item(i) or {} for i in response["Items"]]

    def person_hash(self, person: str) -> str:
        """`person`'s hash under the stack's sender key: the data table keeps what the webhook
        lanes store about them in their partition (domain/senders.py)."""
        from pipeline.adapters.sender_key import SenderKey

        if self._sender_key is None:
            self._sender_key = SenderKey(self.aws("secretsmanager"), self.outputs["SenderKeyArn"])
        return self._sender_key.hash(person)

    def stored_message(self, tenant: str, wamid: str, sender: str) -> dict[str, Any] | None:
        """The messages lane's item for an inbound message, its text read back."""
        from pipeline.domain import stored_text
        from pipeline.tasks.messages import message_key

        found = self.item("DataTableName", message_key(tenant, wamid, self.person_hash(sender)))
        return None if found is None else {**found, "text": stored_text.read(found["text"])}

    def stored_status(self, tenant: str, wamid: str, recipient: str) -> dict[str, Any] | None:
        from pipeline.tasks.messages import status_key

        return self.item("DataTableName", status_key(tenant, wamid, self.person_hash(recipient)))

    def stored_comment(self, tenant: str, comment_id: str, author: str) -> dict[str, Any] | None:
        """A comment as stored untriaged or triaged, its text read back."""
        from pipeline.domain import stored_text
        from pipeline.tasks.messages import comment_key

        found = self.item("DataTableName", comment_key(tenant, comment_id, self.person_hash(author)))
        return None if found is None else {**found, "text": stored_text.read(found["text"])}

    def item(self, table_output: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        from pipeline.adapters.items import from_item, to_item

        found = (
            self.aws("dynamodb")
            .get_item(TableName=self.outputs[table_output], Key=to_item(dict(key)), ConsistentRead=True)
            .get("Item")
        )
        return from_item(found) if found else None

    def scan(self, table_output: str) -> list[dict[str, Any]]:
        """Every item of the table named by a stack output (`WebhookTableName`, ...)."""
        from pipeline.adapters.items import from_item

        dynamodb = self.aws("dynamodb")
        found: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.outputs[table_output], "ConsistentRead": True}
        while True:
            page = dynamodb.scan(**kwargs)
            found.extend(from_item(i) or {} for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ------------------------------------------------------------------ alarms and metrics

    def alarm(self, logical_prefix: str) -> Any:
        (found,) = [a for a in self.runtime.alarms.alarms if a.logical_id.startswith(logical_prefix)]
        return found

    def alarm_state(self, logical_prefix: str) -> str:
        """The alarm's state as CloudWatch's DescribeAlarms reports it."""
        name = self.alarm(logical_prefix).name
        described = self.aws("cloudwatch").describe_alarms(AlarmNames=[name])["MetricAlarms"]
        return str(described[0]["StateValue"]) if described else "missing"

    def pages(self, logical_prefix: str) -> list[Any]:
        """What the alarm's actions delivered to the local on-call inbox, oldest first."""
        return self.runtime.inbox.for_alarm(self.alarm(logical_prefix).name)

    def alarm_fired_at(self, logical_prefix: str, after: float) -> float | None:
        """When the alarm first went, at or after `after` (epoch seconds), into a state that pages:
        ALARM, or INSUFFICIENT_DATA for an alarm on a signal's absence (its only paging state)."""
        alarm = self.alarm(logical_prefix)
        paging = "INSUFFICIENT_DATA" if alarm.insufficient_data_actions else "ALARM"
        for at, _previous, state, _reason in alarm.history:
            if state == paging and at >= after:
                return float(at)
        return None

    def outcome_count(self, lane: str, outcome: str) -> int:
        """Records of the lane that ended in `outcome`, from the consumers' metrics."""
        from pipeline import metric_names
        from stacks.runtime_env import metrics_namespace

        return int(
            self.runtime.metrics.total_matching(
                metrics_namespace(self.runtime.env),
                metric_names.RECORDS,
                {metric_names.LANE: lane, metric_names.OUTCOME: outcome},
            )
        )

    # ------------------------------------------------------------------ the runtime itself

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until no invocation is running (abandoned task threads may still finish late)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(h.stats.in_flight == 0 for h in self.runtime.functions.values()):
                return True
            time.sleep(0.2)
        return False

    @property
    def errors(self) -> list[str]:
        return list(self.runtime.errors)
