"""Meta's side of a subscription, played locally (local_aws/meta_sender.py): batching, retries of
the same bytes with back-off, the alert and the disable after continuous failure, and what is
lost while disabled; then the same rules driving a door over HTTP on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from local_aws.meta_sender import (
    HOUR,
    MINUTE,
    POLICIES,
    DeliveryPolicy,
    MetaSenderThread,
    MetaSubscription,
    Product,
    http_post,
)

SECRET = "app-secret"


def _page(policy: DeliveryPolicy | None = None) -> MetaSubscription:
    return MetaSubscription("page", policy or POLICIES[Product.MESSENGER], SECRET)


def _entry(n: int) -> dict:
    return {"id": "page-1", "time": n, "changes": [{"field": "feed", "value": {"comment_id": f"c{n}"}}]}


def test_waiting_entries_are_batched_into_one_signed_delivery():
    sub = _page()
    for n in range(3):
        sub.publish(_entry(n))

    (delivery,) = sub.due(now=0.0)

    assert json.loads(delivery.body) == {"object": "page", "entry": [_entry(0), _entry(1), _entry(2)]}
    expected = "sha256=" + hmac.new(SECRET.encode(), delivery.body, hashlib.sha256).hexdigest()
    assert sub.signature(delivery.body) == expected


def test_a_batch_holds_at_most_max_entries():
    from dataclasses import replace

    sub = _page(replace(POLICIES[Product.MESSENGER], max_entries=2))
    for n in range(5):
        sub.publish(_entry(n))

    assert [d.entries for d in sub.due(now=0.0)] == [2, 2, 1]


def test_a_failed_delivery_is_retried_as_the_same_bytes_with_growing_delays_until_it_is_taken():
    sub = _page()
    sub.publish(_entry(0))
    (delivery,) = sub.due(0.0)
    body = delivery.body
    now, dues = 0.0, []
    for _ in range(4):
        (again,) = sub.due(now)
        assert again.body == body
        sub.answered(again, 500, now)
        dues.append(again.due - now)
        now = again.due

    assert dues == [0.0, 30.0, MINUTE, 2 * MINUTE]
    (last,) = sub.due(now)
    sub.answered(last, 200, now)
    assert (sub.delivered_entries, sub.dropped_entries, sub.pending_entries) == (1, 0, 0)
    assert sub.failing_since is None
    assert sub.answers == {500: 4, 200: 1}


def test_messenger_alerts_after_15_minutes_and_disables_after_an_hour_of_failing_then_drops_what_happens():
    sub = _page()
    sub.publish(_entry(0))
    now = 0.0
    while not sub.disabled:
        for delivery in sub.due(now):
            sub.answered(delivery, 503, now)
        now += MINUTE

    # Seen at the first failed attempt past each mark: attempts thin out as the back-off grows
    assert 15 * MINUTE <= sub.alerted_at <= 20 * MINUTE
    assert HOUR <= sub.disabled_at <= HOUR + 5 * MINUTE
    assert sub.dropped_entries == 1  # what was still being retried is gone
    sub.publish(_entry(1))
    assert (sub.due(now), sub.dropped_entries) == ([], 2)
    # Re-subscribed, new events flow again; what happened meanwhile does not come back
    sub.resubscribe()
    sub.publish(_entry(2))
    (delivery,) = sub.due(now)
    sub.answered(delivery, 200, now)
    assert (sub.delivered_entries, sub.dropped_entries) == (1, 2)


def test_a_success_between_failures_restarts_the_clock_toward_the_disable():
    sub = _page()
    now = 0.0
    for step in range(6):  # fail for 50 minutes, succeed once, fail 50 minutes more
        sub.publish(_entry(step))
        for delivery in sub.due(now):
            sub.answered(delivery, 200 if step == 3 else 500, now)
        now += 20 * MINUTE if step < 3 else 10 * MINUTE

    assert not sub.disabled
    assert sub.alerted_at is not None


def test_whatsapp_is_never_disabled_and_gives_up_after_7_days():
    sub = MetaSubscription("whatsapp_business_account", POLICIES[Product.WHATSAPP], SECRET)
    sub.publish(_entry(0))
    now = 0.0
    while sub.pending_entries:
        for delivery in sub.due(now):
            sub.answered(delivery, 500, now)
        now += HOUR

    assert (sub.disabled, sub.alerted_at) == (False, None)
    assert sub.dropped_entries == 1
    assert now >= 7 * 24 * HOUR


def test_scaled_clocks_shrink_metas_patience_but_not_the_doors_timeout():
    fast = POLICIES[Product.INSTAGRAM].scaled(1 / 120)

    assert (fast.alert_after, fast.disable_after) == (7.5, 30.0)
    assert fast.retry_delays[:3] == (0.0, 0.25, 0.5)
    assert fast.timeout == POLICIES[Product.INSTAGRAM].timeout
    with pytest.raises(ValueError, match="a clock scale must be > 0"):
        POLICIES[Product.INSTAGRAM].scaled(0)


def test_the_sender_posts_only_to_this_machine():
    with pytest.raises(ValueError, match=r"posts only to 127\.0\.0\.1"):
        http_post("https://example.com/webhooks/meta")


class _Door(BaseHTTPRequestHandler):
    failing = threading.Event()
    bodies: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.bodies.append(body)
        self.send_response(500 if self.failing.is_set() else 200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_over_http_a_door_that_fails_for_a_while_loses_nothing_with_metas_retries():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Door)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/webhooks/meta"
        sub = _page(POLICIES[Product.MESSENGER].scaled(1 / 600))  # an hour in 6 s
        _Door.failing.set()
        with MetaSenderThread(sub, http_post(url)) as sender:
            for n in range(5):
                sender.publish(_entry(n))
            time.sleep(1.0)  # 10 minutes of Meta's time failing
            _Door.failing.clear()
            deadline = time.monotonic() + 20
            while not sender.settled() and time.monotonic() < deadline:
                time.sleep(0.05)

        assert (sub.delivered_entries, sub.dropped_entries, sub.disabled) == (5, 0, False)
        assert sub.failed_attempts >= 2
        assert len(set(_Door.bodies)) < len(_Door.bodies)  # retries carried the same bytes
    finally:
        server.shutdown()
        server.server_close()
