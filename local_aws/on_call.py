"""The local on-call inbox: what SNS delivers to the on-call topic's subscribers, on this machine.

An alarm action that CloudWatch may run (the topic's policy and its key's let it, see
iam/played.py) is published to the topic in moto, and delivered here to each of the topic's
subscriptions as SNS would deliver it: an email subscription to an address at `localhost` (the
local environment's `on-call@localhost`, whose confirmation the runtime plays as it plays the
operator pasting Meta's secret) lands in the inbox with SNS's subject and message; an
address elsewhere, or an HTTPS endpoint, gets nothing, because nothing leaves this machine, and
the runtime says so once per endpoint. The inbox keeps every page in memory and, given a file,
appends each as one JSON line there, so another process (or a person) can read it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from local_aws.deploy import ACCOUNT, REGION

LOCAL_DOMAINS = ("localhost",)
INBOX_FILE = "on-call-inbox.jsonl"


@dataclass(frozen=True)
class Page:
    at: float
    endpoint: str
    subject: str
    alarm: str
    state: str
    reason: str


class OnCallInbox:
    def __init__(
        self,
        path: Path | None = None,
        *,
        on_page: Callable[[Page], None] = lambda page: None,
        on_undeliverable: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.pages: list[Page] = []
        self._path = path
        self._on_page = on_page
        self._on_undeliverable = on_undeliverable
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def deliver(self, topic_arn: str, subject: str, message: str) -> list[Page]:
        """What SNS hands the topic's subscribers for one publish."""
        body: dict[str, Any] = json.loads(message)
        delivered = []
        for protocol, endpoint in _subscriptions(topic_arn):
            if protocol in ("email", "email-json") and endpoint.rpartition("@")[2].lower() in LOCAL_DOMAINS:
                page = Page(
                    at=time.time(),
                    endpoint=endpoint,
                    subject=subject,
                    alarm=str(body.get("AlarmName", "")),
                    state=str(body.get("NewStateValue", "")),
                    reason=str(body.get("NewStateReason", "")),
                )
                self._keep(page)
                delivered.append(page)
            elif endpoint not in self._told:
                self._told.add(endpoint)
                self._on_undeliverable(
                    f"on-call {protocol} {endpoint} gets no page from the local runtime: nothing leaves this machine "
                    f"(only addresses at {', '.join(LOCAL_DOMAINS)} land in the local inbox)"
                )
        return delivered

    def for_alarm(self, alarm_name: str) -> list[Page]:
        with self._lock:
            return [p for p in self.pages if p.alarm == alarm_name]

    def _keep(self, page: Page) -> None:
        with self._lock:
            self.pages.append(page)
            if self._path is not None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                with self._path.open("a") as inbox:
                    inbox.write(json.dumps(asdict(page)) + "\n")
        self._on_page(page)


def _subscriptions(topic_arn: str) -> list[tuple[str, str]]:
    """(protocol, endpoint) of the topic's subscriptions, as the emulated SNS holds them."""
    from moto.sns.models import sns_backends

    backend = sns_backends[ACCOUNT][REGION]
    return [
        (str(s.protocol), str(s.endpoint)) for s in list(backend.subscriptions.values()) if s.topic.arn == topic_arn
    ]
