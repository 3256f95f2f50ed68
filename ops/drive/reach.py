"""How a session reaches the running pipeline: its stack outputs, AWS clients on the emulator,
and the names by which its functions, queues and lanes are found."""

from __future__ import annotations

from typing import Any

from stacks.runtime_env import lane_id

REGION = "us-east-1"


class Reach:
    def __init__(self, runtime: Any) -> None:
        import boto3

        self.runtime = runtime
        self.outputs: dict[str, str] = dict(runtime.deployment.outputs)
        # In-process clients: the emulator is mocked in this process, so no call crosses a socket.
        self._boto = boto3.session.Session(region_name=REGION)
        self._clients: dict[str, Any] = {}

    def aws(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            client = self._boto.client(service)
            self._clients[service] = client
        return client

    def function_name(self, role: str) -> str:
        """`ingress`, `jobs`, `sweeper`, or a lane name."""
        if role in ("ingress", "jobs", "sweeper"):
            suffix = f".{role}.handler"
            (name,) = [h.config.name for h in self.runtime.functions.values() if h.config.handler.endswith(suffix)]
            return str(name)
        return self.outputs[f"{lane_id(role)}FunctionName"]

    def host(self, role: str) -> Any:
        name = self.function_name(role)
        (host,) = [h for h in self.runtime.functions.values() if h.config.name == name]
        return host

    def queue_url(self, lane: str, *, dlq: bool = False) -> str:
        return self.outputs[f"{lane_id(lane)}{'DlqUrl' if dlq else 'QueueUrl'}"]

    def lane_view(self, lane: str) -> Any:
        return self.runtime.lanes[lane]

    def runtime_queue(self, lane: str) -> Any:
        """The emulator's own queue object (for what no SQS API exposes: fair-queue thresholds)."""
        from moto.sqs.models import sqs_backends

        from local_aws.deploy import ACCOUNT

        return sqs_backends[ACCOUNT][REGION].queues[self.lane_view(lane).queue_name]
