"""`lanectl load`: refuses anything but this machine, sends exactly rate x duration signed
deliveries, and reports what it was answered."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ops import load
from ops.cli import Runtime, run


@pytest.mark.parametrize("url", ["http://10.0.0.1:8787", "http://192.168.1.5", "https://127.0.0.1:8787", "ftp://x"])
def test_anything_but_a_loopback_http_url_is_refused_before_a_packet(url):
    with pytest.raises(load.LoadError):
        load.loopback_only(url)


def test_loopback_names_are_accepted():
    assert load.loopback_only("http://127.0.0.1:8787") == ("127.0.0.1", 8787)
    assert load.loopback_only("http://localhost:9") == ("localhost", 9)


@pytest.mark.parametrize("text", ["0", "-1", "2001", "fast"])
def test_a_rate_out_of_bounds_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        load.rate_argument(text)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h", 3600), ("45", 45)])
def test_durations_read_as_people_write_them(text, seconds):
    assert load.duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["0s", "2h", "soon", "-5m"])
def test_a_duration_out_of_bounds_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        load.duration_seconds(text)


def test_deliveries_are_whatsapp_texts_of_the_asked_size_spread_over_the_businesses():
    made = [d for _, d in zip(range(60), load.deliveries(businesses=30, size=1500), strict=False)]
    assert len({d.tenant for d in made}) == 30
    assert len({d.message_id for d in made}) == 60
    for delivery in made:
        assert abs(len(delivery.body) - 1500) <= 16
        payload = json.loads(delivery.body)
        value = payload["entry"][0]["changes"][0]["value"]
        assert payload["entry"][0]["id"] == delivery.tenant
        assert value["messages"][0]["id"] == delivery.message_id
        assert value["messages"][0]["type"] == "text"


def test_percentiles_pick_the_ranked_value():
    values = [float(v) for v in range(1, 101)]
    assert load.percentile(values, 0.50) == 50.0
    assert load.percentile(values, 0.99) == 99.0
    assert load.percentile([], 0.5) is None


class _Door(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        expected = "sha256=" + hmac.new(b"secret", body, hashlib.sha256).hexdigest()
        with self.lock:
            self.seen.append((self.headers.get("x-hub-signature-256", ""), body))
            refuse = len(self.seen) % 4 == 0
        status = 429 if refuse else 200 if self.headers.get("x-hub-signature-256") == expected else 403
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        return


def test_a_run_sends_exactly_rate_times_duration_signed_deliveries_and_counts_every_answer():
    _Door.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Door)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        runner = load.LoadRun(
            url=f"http://127.0.0.1:{server.server_address[1]}", app_secret="secret", rate=40, seconds=1, connections=4
        )
        report = load.measure(runner, stack=None, pid=None, interval_seconds=0.5, write=lambda _: None)
    finally:
        server.shutdown()
    assert len(_Door.seen) == 40
    assert report.total.sent == 40
    assert report.total.statuses == {"200": 30, "429": 10}
    assert sum(i.sent for i in report.intervals) == 40
    assert report.total.door_p99_ms is not None


def test_the_command_refuses_a_remote_url_with_exit_2(capsys):
    assert run(["load", "--url", "http://10.1.2.3:8787", "--for", "1s"], Runtime()) == 2
    assert "loopback" in capsys.readouterr().err
