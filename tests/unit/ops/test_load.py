"""`lanectl load`: refuses anything but this machine, sends exactly rate x duration signed
deliveries, and reports what it was answered."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest

from ops.cli import Runtime, run
from ops.load import command as load
from pipeline.adapters.sender_key import SenderKey
from pipeline.tasks.messages import message_key, status_key
from tests.support.aws import REGION


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
    made = [d for _, d in zip(range(60), load.deliveries("texts", businesses=30, size=1500), strict=False)]
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


class _StoringDoor(BaseHTTPRequestHandler):
    """A door that accepts a correctly signed delivery and stores its message at once, as the
    pipeline's consumer would, in the stack's data table."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        expected = "sha256=" + hmac.new(b"s3cr3t-app", body, hashlib.sha256).hexdigest()
        status = 200 if self.headers.get("x-hub-signature-256") == expected else 403
        if status == 200:
            entry = json.loads(body)["entry"][0]
            value = entry["changes"][0]["value"]
            if "statuses" in value:
                update = value["statuses"][0]
                key = status_key(entry["id"], update["id"], self.server.sender_key.hash(update["recipient_id"]))
                moment = "applied_at"
            else:
                message = value["messages"][0]
                key = message_key(entry["id"], message["id"], self.server.sender_key.hash(message["from"]))
                moment = "stored_at"
            boto3.client("dynamodb", region_name=REGION).put_item(
                TableName="data", Item={**{k: {"S": v} for k, v in key.items()}, moment: {"N": str(time.time())}}
            )
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        return


def _storing_door(dev_stack) -> tuple[ThreadingHTTPServer, str]:
    """A door that stores every delivery it accepts in the dev stack's data table; (server, url)."""
    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName="data",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StoringDoor)
    outputs = boto3.client("cloudformation", region_name=REGION).describe_stacks(StackName=dev_stack.name)
    arn = next(o["OutputValue"] for o in outputs["Stacks"][0]["Outputs"] if o["OutputKey"] == "SenderKeyArn")
    server.sender_key = SenderKey(boto3.client("secretsmanager", region_name=REGION), arn)  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def test_the_figures_as_json_for_scripts(dev_stack, lanectl):
    # Given a stack whose door stores every delivery it accepts
    server, url = _storing_door(dev_stack)
    # When a script runs the load with --output json
    try:
        result = lanectl(
            "load", "--env", "dev", "--region", REGION, "--url", url, "--rate", "20", "--for", "1s",
            "--interval", "0.5", "--connections", "4", "--output", "json",
        )  # fmt: skip
    finally:
        server.shutdown()
    # Then stdout is one document with every figure, and the running lines went to stderr
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert (report["rate"], report["seconds"]) == (20, 1)
    assert report["total"]["sent"] == 20
    assert report["total"]["statuses"] == {"200": 20}
    assert report["total"]["stored"] == 20
    assert report["not_stored"] == 0
    assert sum(i["sent"] for i in report["intervals"]) == 20
    assert set(report["intervals"][0]["queue_depth"]) == {"messages", "engagement", "ai", "bulk", "scheduled"}
    assert "total: 20 sent" in result.err


def test_statuses_count_as_stored_once_their_status_is_applied(dev_stack, lanectl):
    # Given a stack whose door applies every status it accepts to the status's item
    server, url = _storing_door(dev_stack)
    # When the load sends the statuses shape
    try:
        result = lanectl(
            "load", "--env", "dev", "--region", REGION, "--url", url, "--rate", "20", "--for", "1s",
            "--interval", "0.5", "--connections", "4", "--shape", "statuses", "--output", "json",
        )  # fmt: skip
    finally:
        server.shutdown()
    # Then every status is read back from its own item, as a message would be from its item
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["shape"] == "statuses"
    assert (report["total"]["sent"], report["total"]["stored"], report["not_stored"]) == (20, 20, 0)
