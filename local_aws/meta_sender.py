"""Meta's side of a webhook subscription, played locally: events batched into signed deliveries,
each retried with back-off while the door answers anything but 200, and the subscription alerted
and then disabled when the door keeps failing (Messenger and Instagram), as Meta's Webhooks
documentation describes it. Clocks are scaled, so an hour of Meta's patience passes in seconds.

What Meta documents, and what is modelled where it does not say:
- Messenger and Instagram: a failed delivery is retried at once, then with decreasing frequency
  for 36 hours; after 15 minutes of failing deliveries the developer is alerted, and after an hour
  the app's subscription for that Page or account is disabled until someone subscribes it again.
  Nothing is delivered while it is disabled.
- WhatsApp: retried with decreasing frequency for up to 7 days; no disable.
- The retry times between "at once" and the horizon are not published: RETRY_DELAYS is a model
  (doubling from 30 s to an hour, then hourly), said so wherever a figure depends on it.
- A retry sends the same bytes, so the door finds the row it may already have written.

`MetaSubscription` is the rule (pure, clock passed in); `MetaSenderThread` runs one against a
door over HTTP. Only 127.0.0.1 is ever posted to.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0

RETRY_DELAYS = (0.0, 30.0, MINUTE, 2 * MINUTE, 4 * MINUTE, 8 * MINUTE, 16 * MINUTE, 32 * MINUTE, HOUR)
"""Seconds after each failed attempt before the next (the last repeats): "at once, then with
decreasing frequency", modelled."""


class Product(StrEnum):
    WHATSAPP = "whatsapp"
    MESSENGER = "messenger"
    INSTAGRAM = "instagram"


@dataclass(frozen=True)
class DeliveryPolicy:
    retry_delays: tuple[float, ...]
    give_up_after: float
    """From a delivery's first attempt: after this, it is dropped."""
    alert_after: float | None
    """Failing this long without a success, Meta alerts the app's developers (None: never)."""
    disable_after: float | None
    """Failing this long without a success, Meta disables the subscription (None: never)."""
    max_entries: int = 1000
    """Entries batched into one delivery."""
    timeout: float = 20.0
    """How long Meta waits for the door's answer; a slower answer is a failure."""

    def scaled(self, factor: float) -> DeliveryPolicy:
        """Every duration of Meta's patience times `factor` (1/120: an hour in 30 s). The answer's
        timeout is not scaled: the door's own time is real."""
        if factor <= 0:
            raise ValueError(f"a clock scale must be > 0, got {factor}")

        def scale(seconds: float | None) -> float | None:
            return None if seconds is None else seconds * factor

        return replace(
            self,
            retry_delays=tuple(d * factor for d in self.retry_delays),
            give_up_after=self.give_up_after * factor,
            alert_after=scale(self.alert_after),
            disable_after=scale(self.disable_after),
        )


POLICIES = {
    Product.WHATSAPP: DeliveryPolicy(RETRY_DELAYS, give_up_after=7 * DAY, alert_after=None, disable_after=None),
    Product.MESSENGER: DeliveryPolicy(
        RETRY_DELAYS, give_up_after=36 * HOUR, alert_after=15 * MINUTE, disable_after=HOUR
    ),
    Product.INSTAGRAM: DeliveryPolicy(
        RETRY_DELAYS, give_up_after=36 * HOUR, alert_after=15 * MINUTE, disable_after=HOUR
    ),
}


@dataclass(eq=False)
class Delivery:
    """One batch of entries, as the same bytes on every attempt (compared by identity)."""

    body: bytes
    entries: int
    first_attempt: float
    attempts: int = 0
    due: float = 0.0


@dataclass
class MetaSubscription:
    """One app's subscription for one Page, Instagram account or WhatsApp account."""

    object_name: str
    """The payload's `object`: page, instagram, whatsapp_business_account."""
    policy: DeliveryPolicy
    app_secret: str
    waiting: list[dict[str, Any]] = field(default_factory=list)
    """Entries that happened and are not in a delivery yet."""
    deliveries: list[Delivery] = field(default_factory=list)
    failing_since: float | None = None
    alerted_at: float | None = None
    alerted_after: float | None = None
    """How long it had been failing when Meta alerted."""
    disabled_at: float | None = None
    delivered_entries: int = 0
    dropped_entries: int = 0
    """Given up after the policy's horizon, or happened while the subscription was disabled."""
    attempts: int = 0
    failed_attempts: int = 0
    longest_failing: float = 0.0
    answers: dict[int, int] = field(default_factory=dict)
    """How often the door answered each status (0: no answer in time)."""

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None

    def publish(self, entry: dict[str, Any]) -> None:
        """Something happened on the account: Meta will deliver it, unless it is disabled."""
        if self.disabled:
            self.dropped_entries += 1
            return
        self.waiting.append(entry)

    def resubscribe(self) -> None:
        """What an operator does after "Webhooks Disabled": deliveries start again from new events
        (Meta does not send what happened meanwhile)."""
        self.disabled_at = None
        self.failing_since = None
        self.alerted_at = None
        self.alerted_after = None

    def due(self, now: float) -> list[Delivery]:
        """Batch what is waiting into deliveries, and return every delivery due by `now`."""
        if self.disabled:
            return []
        while self.waiting:
            batch, self.waiting = self.waiting[: self.policy.max_entries], self.waiting[self.policy.max_entries :]
            body = json.dumps({"object": self.object_name, "entry": batch}, separators=(",", ":")).encode()
            self.deliveries.append(Delivery(body, len(batch), first_attempt=now, due=now))
        return [d for d in self.deliveries if d.due <= now]

    def signature(self, body: bytes) -> str:
        return "sha256=" + hmac.new(self.app_secret.encode(), body, hashlib.sha256).hexdigest()

    def answered(self, delivery: Delivery, status: int, now: float) -> None:
        """The door's answer to one attempt (0: none within the policy's timeout)."""
        self.attempts += 1
        delivery.attempts += 1
        self.answers[status] = self.answers.get(status, 0) + 1
        if status == 200:
            self.deliveries.remove(delivery)
            self.delivered_entries += delivery.entries
            self.failing_since = None
            return
        self.failed_attempts += 1
        if self.failing_since is None:
            self.failing_since = now
        failing = now - self.failing_since
        self.longest_failing = max(self.longest_failing, failing)
        if now - delivery.first_attempt >= self.policy.give_up_after:
            self.deliveries.remove(delivery)
            self.dropped_entries += delivery.entries
        else:
            delays = self.policy.retry_delays
            delivery.due = now + delays[min(delivery.attempts - 1, len(delays) - 1)]
        if self.policy.alert_after is not None and self.alerted_at is None and failing >= self.policy.alert_after:
            self.alerted_at = now
            self.alerted_after = failing
        if self.policy.disable_after is not None and failing >= self.policy.disable_after:
            self._disable(now)

    def _disable(self, now: float) -> None:
        self.disabled_at = now
        self.dropped_entries += sum(d.entries for d in self.deliveries) + len(self.waiting)
        self.deliveries.clear()
        self.waiting.clear()

    @property
    def pending_entries(self) -> int:
        return len(self.waiting) + sum(d.entries for d in self.deliveries)


Post = Callable[[bytes, dict[str, str], float], int]
"""POST a body with headers, waiting at most the given seconds: the status, or 0 for none."""


def http_post(url: str) -> Post:
    """A poster for the local door only: anything but 127.0.0.1 or localhost is refused."""
    import urllib.error
    import urllib.request

    host = urlsplit(url).hostname
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the local Meta sender posts only to 127.0.0.1, not {host!r}")

    def post(body: bytes, headers: dict[str, str], timeout: float) -> int:
        request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310 (checked above)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except (TimeoutError, OSError):
            return 0

    return post


class MetaSenderThread:
    """Runs one subscription against the door until stopped: the sender Meta is, on this machine."""

    def __init__(
        self,
        subscription: MetaSubscription,
        post: Post,
        *,
        clock: Callable[[], float] = time.time,
        tick: float = 0.02,
    ) -> None:
        self.subscription = subscription
        self._post = post
        self._clock = clock
        self._tick = tick
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="meta-sender", daemon=True)

    def publish(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.subscription.publish(entry)

    def __enter__(self) -> MetaSenderThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def settled(self) -> bool:
        """Nothing left to deliver (all delivered, dropped, or the subscription disabled)."""
        with self._lock:
            return self.subscription.pending_entries == 0

    def _loop(self) -> None:
        sub = self.subscription
        while not self._stop.is_set():
            with self._lock:
                due = sub.due(self._clock())
            for delivery in due:
                headers = {"content-type": "application/json", "x-hub-signature-256": sub.signature(delivery.body)}
                status = self._post(delivery.body, headers, sub.policy.timeout)
                with self._lock:
                    if delivery in sub.deliveries:
                        sub.answered(delivery, status, self._clock())
            self._stop.wait(self._tick)
