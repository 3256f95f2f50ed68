"""`lanectl load`'s traffic: signed Meta deliveries (ops/load/shapes.py) sent open loop, as Meta sends,
to this machine only.

A delivery leaves at its scheduled time whether or not earlier ones were answered (up to
`connections` at once; one that finds none free is counted as late).
"""

from __future__ import annotations

import http.client
import ipaddress
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from local_aws.client import sign
from ops.load.shapes import Delivery, deliveries

REQUEST_TIMEOUT_SECONDS = 30.0
"""API Gateway's own integration limit: no answer is worth waiting for past it."""


class LoadError(Exception):
    """A bad argument or a target this tool refuses; the CLI prints it and exits 2."""


def loopback_only(url: str) -> tuple[str, int]:
    """(host, port) of an http:// URL on this machine; anything else is refused before a packet."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise LoadError(f"--url must be http://HOST:PORT on this machine, got {url!r}")
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(parts.hostname, parts.port or 80)}
    except socket.gaierror as exc:
        raise LoadError(f"cannot resolve {parts.hostname!r}: {exc}") from None
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise LoadError(f"{url} is not a loopback address: load is only ever sent to this machine")
    return parts.hostname, parts.port or 80


@dataclass
class Sent:
    delivery: Delivery
    scheduled: float
    """Wall-clock time it was due to leave."""
    started: float = 0.0
    status: int | None = None
    """None: the connection failed or timed out."""
    latency: float = 0.0
    late: bool = False
    answered: bool = False
    stored_at: float | None = None


class _Connections:
    """Keep-alive HTTP connections, one per sending thread."""

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._local = threading.local()

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> int:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=REQUEST_TIMEOUT_SECONDS)
            self._local.connection = connection
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.getheader("connection", "").lower() == "close":
                connection.close()
                self._local.connection = None
            return response.status
        except BaseException:
            connection.close()
            self._local.connection = None
            raise


class LoadRun:
    def __init__(
        self,
        *,
        url: str,
        app_secret: str,
        rate: float,
        seconds: float,
        businesses: int = 30,
        size: int = 1500,
        connections: int = 64,
        shape: str = "texts",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.host, self.port = loopback_only(url)
        self.app_secret = app_secret
        self.rate = rate
        self.seconds = seconds
        self.count = max(1, int(rate * seconds))
        self.businesses = businesses
        self.size = size
        self.shape = shape
        self._connections = _Connections(self.host, self.port)
        self._pool_size = connections
        self._clock = clock
        self.sent: list[Sent] = []
        self._work: queue.Queue[Sent | None] = queue.Queue()
        self._idle = threading.Semaphore(connections)
        self._stop = threading.Event()
        self.started_at = 0.0

    def stop(self) -> None:
        self._stop.set()

    def elapsed(self) -> float:
        return self._clock() - self.started_at

    def _send(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            headers = {
                "content-type": "application/json",
                "x-hub-signature-256": sign(self.app_secret, item.delivery.body),
            }
            item.started = self._clock()
            began = time.monotonic()
            try:
                item.status = self._connections.post("/webhooks/meta", item.delivery.body, headers)
            except (OSError, http.client.HTTPException):
                item.status = None
            item.latency = time.monotonic() - began
            item.answered = True
            self._idle.release()

    def run(self) -> None:
        """Send `count` deliveries on schedule, then wait for their answers."""
        threads = [threading.Thread(target=self._send, daemon=True) for _ in range(self._pool_size)]
        for thread in threads:
            thread.start()
        source = deliveries(self.shape, self.businesses, self.size)
        self.started_at = self.started_at or self._clock()
        origin = time.monotonic()
        try:
            for index in range(self.count):
                due = index / self.rate
                wait = due - (time.monotonic() - origin)
                if wait > 0 and self._stop.wait(wait):
                    break
                if self._stop.is_set():
                    break
                item = Sent(next(source), scheduled=self.started_at + due)
                # A delivery that finds every connection busy leaves as soon as one frees.
                item.late = not self._idle.acquire(blocking=False)
                if item.late:
                    self._idle.acquire()
                self.sent.append(item)
                self._work.put(item)
        finally:
            for _ in threads:
                self._work.put(None)
            deadline = time.monotonic() + REQUEST_TIMEOUT_SECONDS + 1
            for thread in threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
