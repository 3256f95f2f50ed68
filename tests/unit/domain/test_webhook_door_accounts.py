"""The webhook door's rules notify the source accounts of every signed, parseable delivery after
its send, and a notification that fails changes nothing of the delivery's answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.domain.signature import sign
from pipeline.domain.webhook.account_silence import Account
from pipeline.domain.webhook.door import WebhookDoor, WebhookDoorPorts
from tests.unit.domain.door_ports import APP_SECRET, NOW, DeliveryLog, Hasher, Queue, Secrets, Telemetry, request
from tests.unit.domain.test_webhook_door import RULES
from tests.unit.ingress.conftest import encode, page_comment, whatsapp_message


@dataclass
class Notes:
    """The account port in memory: what it was asked to note, and how many sends preceded each."""

    queue: Queue
    fails: bool = False
    noted: list[tuple[list[Account], float, int]] = field(default_factory=list)

    def note(self, accounts, now: float) -> int:
        if self.fails:
            raise RuntimeError("DynamoDB is down")
        self.noted.append((list(accounts), now, len(self.queue.sent)))
        return len(accounts)


def _door(notes_fail: bool = False) -> tuple[WebhookDoor, Notes, Queue, DeliveryLog, Telemetry]:
    queue, log, telemetry = Queue(), DeliveryLog(), Telemetry()
    notes = Notes(queue, fails=notes_fail)
    ports = WebhookDoorPorts(secrets=Secrets(), log=log, queue=queue, senders=Hasher(), accounts=notes)
    return WebhookDoor(RULES, ports, telemetry, lambda: NOW), notes, queue, log, telemetry


def _post(raw: bytes):
    return request("POST", "/webhooks/meta", body=raw.decode(), headers={"x-hub-signature-256": sign(APP_SECRET, raw)})


def test_a_deliverys_accounts_are_noted_after_its_send():
    door, notes, _, _, _ = _door()

    reply = door.answer(_post(encode(whatsapp_message(waba="5550101"))))

    assert reply.status == 200
    assert notes.noted == [([Account("5550101", "whatsapp")], NOW, 1)]


def test_a_redelivery_of_a_finished_row_is_noted_too_meta_sent_it():
    door, notes, _, log, _ = _door()
    raw = encode(page_comment(page="7770101"))
    door.answer(_post(raw))
    (row_id,) = log.rows
    log.statuses[row_id] = "done"

    door.answer(_post(raw))

    assert [accounts for accounts, _, _ in notes.noted] == [[Account("7770101", "page")]] * 2


def test_a_note_that_fails_is_logged_and_the_delivery_is_still_sent_and_answered_200():
    door, _, queue, _, telemetry = _door(notes_fail=True)

    reply = door.answer(_post(encode(whatsapp_message(waba="5550102"))))

    assert reply.status == 200
    assert len(queue.sent) == 1
    assert ("warning", "could not note the delivery's source accounts") in [(lv, m) for lv, m, _ in telemetry.lines]


def test_unparseable_or_unsigned_deliveries_note_nothing():
    door, notes, _, _, _ = _door()
    door.answer(_post(b"{broken"))
    door.answer(request("POST", "/webhooks/meta", body=encode(whatsapp_message()).decode()))

    assert notes.noted == []
