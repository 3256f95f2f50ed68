"""Meta webhook payloads shaped as Meta sends them, and a TaskContext for calling tasks directly."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pipeline.domain import senders
from pipeline.domain.dependencies.model import Completion
from pipeline.domain.effects import Table
from pipeline.domain.envelope import Envelope
from pipeline.settings.auto_reply import AutoReplySettings
from pipeline.settings.tenant_assets import AssetBinding

WABA = "waba-100"
PAGE = "page-200"
CUSTOMER = "15550001"
"""Who sends the test messages and receives the statuses, unless a test says otherwise."""
COMMENTER = "user-9"
HARNESS_KEY = b"test-sender-key-0123456789abcdefghijklmnopqrstuv"
"""The sender key of the moto deployments (tests/support/aws.py SENDER_KEY)."""
FAKE_KEY = b"fake-sender-key"
"""FakeContext's sender key."""


def person(who: str = CUSTOMER, key: bytes = HARNESS_KEY) -> str:
    """The data table partition of what is stored about `who`."""
    return senders.person_partition(senders.sender_hash(key, who))


def message_at(wamid: str, sender: str = CUSTOMER, tenant: str = WABA, key: bytes = HARNESS_KEY) -> tuple[str, str]:
    """(pk, sk) of a stored inbound message."""
    return person(sender, key), f"msg#{tenant}#{wamid}"


def status_at(wamid: str, recipient: str = CUSTOMER, tenant: str = WABA) -> tuple[str, str]:
    """(pk, sk) of a sent message's status item."""
    return person(recipient), f"status#{tenant}#{wamid}"


def comment_at(comment_id: str, tenant: str = PAGE, author: str = COMMENTER) -> tuple[str, str]:
    """(pk, sk) of a comment, stored untriaged or triaged."""
    return person(author), f"comment#{tenant}#{comment_id}"


def whatsapp(*, messages: list[dict] | None = None, statuses: list[dict] | None = None, waba: str = WABA) -> dict:
    value: dict[str, Any] = {"messaging_product": "whatsapp", "metadata": {"phone_number_id": "pn-1"}}
    if messages is not None:
        value["messages"] = messages
    if statuses is not None:
        value["statuses"] = statuses
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": waba, "changes": [{"field": "messages", "value": value}]}],
    }


def text_message(wamid: str, body: str = "hi", ts: int = 1_700_000_000, sender: str = CUSTOMER) -> dict:
    return {"from": sender, "id": wamid, "timestamp": str(ts), "type": "text", "text": {"body": body}}


def status(wamid: str, name: str, ts: int = 1_700_000_100) -> dict:
    return {"id": wamid, "status": name, "timestamp": str(ts), "recipient_id": CUSTOMER}


def comment_change(comment_id: str, text: str, post: str = "post-1", verb: str = "add") -> dict:
    return {
        "field": "feed",
        "value": {
            "item": "comment",
            "verb": verb,
            "comment_id": comment_id,
            "post_id": post,
            "message": text,
            "from": {"id": COMMENTER, "name": "Sam"},
        },
    }


def messenger_message(
    sender: str, mid: str, text: str, *, page: str = PAGE, echo: bool = False, ts: int = 1_700_000_000_000
) -> dict:
    """A Messenger text event, from `sender` (a page-scoped id) to the Page; with `echo`, Meta's
    copy of the Page's own message to `sender` (sender and recipient swapped, `is_echo`)."""
    message: dict[str, Any] = {"mid": mid, "text": text}
    ends = {"sender": {"id": sender}, "recipient": {"id": page}}
    if echo:
        message.update(is_echo=True, app_id=1517776481860111)
        ends = {"sender": {"id": page}, "recipient": {"id": sender}}
    return {
        "object": "page",
        "entry": [{"id": page, "time": ts, "messaging": [{**ends, "timestamp": ts, "message": message}]}],
    }


def feed(*changes: dict, page: str = PAGE) -> dict:
    return {"object": "page", "entry": [{"id": page, "time": 1_700_000_000, "changes": list(changes)}]}


@dataclass
class FakeVendor:
    """The lane's model as the consumer is given it: answers in order, then "ok"."""

    answers: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    tokens: tuple[int, int] = (0, 0)

    def complete(self, prompt: str, *, timeout: float) -> Completion:
        self.prompts.append(prompt)
        return Completion(self.answers.pop(0) if self.answers else "ok", *self.tokens)


@dataclass
class FakeTaskModel(FakeVendor):
    """The model as a task sees it (`ctx.vendor`): the answer's text."""

    def complete(self, prompt: str, *, timeout: float) -> str:  # type: ignore[override]
        return super().complete(prompt, timeout=timeout).text


@dataclass
class FakeContext:
    """A TaskContext with a dict for the tables, for calling a task without AWS."""

    envelope: Envelope
    payload: Any
    lane: str = "messages"
    now: float = field(default_factory=time.time)
    vendor: FakeTaskModel = field(default_factory=FakeTaskModel)
    options: Mapping[str, str] = field(default_factory=dict)
    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    held: int = 0
    row_names_everyone: bool = False
    auto_reply: AutoReplySettings = field(default_factory=AutoReplySettings)
    assets: AssetBinding = field(default_factory=AssetBinding)

    def owner_of(self, asset: str) -> str | None:
        return self.assets.owner_of(asset)

    def option(self, name: str, default: str) -> str:
        return self.options.get(name, default)

    def read(self, table: Table, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.items.get((str(table), str(sorted(key.items()))))

    def put(self, table: Table, key: Mapping[str, Any], item: dict[str, Any]) -> None:
        self.items[(str(table), str(sorted(key.items())))] = {**key, **item}

    @contextmanager
    def dependency(self) -> Iterator[None]:
        self.held += 1
        yield

    def remaining(self) -> float:
        return 5.0

    def sender_hash(self, person: str) -> str | None:
        return senders.sender_hash(FAKE_KEY, person) if senders.normalise(person) else None


def envelope(
    lane: str,
    kind: str,
    *,
    tenant: str = "t1",
    work_id: str = "w1",
    source: str = "internal",
    payload: Any = None,
    created_at: float | None = None,
) -> Envelope:
    return Envelope(
        id=work_id,
        lane=lane,
        tenant=tenant,
        kind=kind,
        source=source,
        created_at=created_at if created_at is not None else time.time(),
        payload=payload or {},
    )
