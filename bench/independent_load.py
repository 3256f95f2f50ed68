"""A load generator that shares nothing with the project: the standard library's HTTP client and
boto3, payloads written from Meta's documented WhatsApp Cloud API webhook shape, no import from
the repository. It checks the project's own generator (`lanectl load`) is not the reason the
figures hold: one customer writes to 30 businesses (the shape that once took the door to seconds).

    lanectl local --no-live --retention 60 &      # a runtime to load; note its pid
    python bench/independent_load.py http://127.0.0.1:8787 http://127.0.0.1:5599 --pid PID --rate 50 --for 600

Open loop: each delivery is sent at its time (32 connections), whatever the answers before it
did. A reader in a process of its own (so its parsing never delays the sender) scans the data
table every 10 s for what was stored and when (`stored_at`), and counts any Meta message id
stored twice. Prints the door's latency as the client saw it (whole run, each minute, and apart
for the deliveries sent while the reader was scanning), sent-to-stored latency, the runtime's
CPU (per webhook and as a share of the machine) and memory from /proc, and the queues left
non-empty. Traffic goes to the URLs given, which should be 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3

BUSINESSES = 30
CUSTOMER = "447911123456"
CONNECTIONS = 32
BODY = ("hello, is my order on its way? " * 40)[:1200]


def client(endpoint: str, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def delivery(tag: str, n: int) -> dict[str, Any]:
    """One WhatsApp text, as Meta's webhook reference shows a `messages` change."""
    message = {
        "from": CUSTOMER,
        "id": f"wamid.{tag}{n:07d}",
        "timestamp": str(int(time.time())),
        "type": "text",
        "text": {"body": BODY},
    }
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15551234567", "phone_number_id": f"20{n % BUSINESSES:04d}"},
        "contacts": [{"profile": {"name": "Independent"}, "wa_id": CUSTOMER}],
        "messages": [message],
    }
    entry = {"id": f"10{n % BUSINESSES:04d}", "changes": [{"field": "messages", "value": value}]}
    return {"object": "whatsapp_business_account", "entry": [entry]}


def read_stored(aws: str, tag: str, out: str, stop: str) -> None:
    """The reader: every 10 s, one JSON line of what the data table holds of this run."""
    dynamodb = client(aws, "dynamodb")
    table = next(t for t in dynamodb.list_tables()["TableNames"] if "DataTable" in t)
    seen: set[str] = set()

    def scan(lines: Any) -> None:
        started, copies, new, items = time.time(), {}, {}, 0
        pages = dynamodb.get_paginator("scan").paginate(TableName=table, ProjectionExpression="sk, stored_at")
        for page in pages:
            for item in page["Items"]:
                items += 1
                sk = item.get("sk", {}).get("S", "")
                if tag in sk:
                    wamid = sk[sk.index("wamid.") :]
                    copies[wamid] = copies.get(wamid, 0) + 1
                    if wamid not in seen and "stored_at" in item:
                        new[wamid] = float(item["stored_at"]["N"])
        seen.update(new)
        twice = sum(1 for count in copies.values() if count > 1)
        record = {"t0": started, "t1": time.time(), "items": items, "twice": twice, "new": new}
        lines.write(json.dumps(record) + "\n")
        lines.flush()

    with open(out, "a", encoding="utf-8") as lines:
        while not os.path.exists(stop):
            time.sleep(10)
            scan(lines)
        for _ in range(3):
            scan(lines)
            time.sleep(5)


class Proc:
    def __init__(self, pid: int) -> None:
        self.pid = pid

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().split(")")[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        return int(Path(f"/proc/{self.pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def pct(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3) if ordered else None


def send(
    api: str, app_secret: bytes, tag: str, rate: float, seconds: float
) -> list[tuple[str, float, float, int, float]]:
    """Open loop: (Meta message id, sent at, seconds to the answer, status, seconds late) per delivery."""
    url = urlparse(api)
    results: list[tuple[str, float, float, int, float]] = []
    lock = threading.Lock()
    work: queue.Queue[tuple[int, float] | None] = queue.Queue()

    def sender() -> None:
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        while (item := work.get()) is not None:
            n, due = item
            raw = json.dumps(delivery(tag, n)).encode()
            signature = "sha256=" + hmac.new(app_secret, raw, hashlib.sha256).hexdigest()
            headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature}
            started = time.time()
            try:
                connection.request("POST", "/webhooks/meta", body=raw, headers=headers)
                answer = connection.getresponse()
                answer.read()
                status = answer.status
            except OSError:
                connection.close()
                connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
                status = 0
            with lock:
                results.append((f"wamid.{tag}{n:07d}", started, time.time() - started, status, started - due))

    senders = [threading.Thread(target=sender, daemon=True) for _ in range(CONNECTIONS)]
    for thread in senders:
        thread.start()
    start, n = time.time(), 0
    while time.time() - start < seconds:
        due = start + n / rate
        if due > time.time():
            time.sleep(min(0.005, due - time.time()))
            continue
        work.put((n, due))
        n += 1
    for _ in senders:
        work.put(None)
    for thread in senders:
        thread.join(timeout=40)
    return results


def read_lines(out: str) -> tuple[dict[str, float], list[tuple[float, float, int]], int]:
    stored: dict[str, float] = {}
    scans: list[tuple[float, float, int]] = []
    twice = 0
    for line in Path(out).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        scans.append((record["t0"], record["t1"], record["items"]))
        twice = max(twice, record["twice"])
        for wamid, at in record["new"].items():
            stored.setdefault(wamid, at)
    return stored, scans, twice


def queues_left(aws: str) -> dict[str, Any]:
    sqs = client(aws, "sqs")
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    left = {}
    for queue_url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        if any(attributes[name] != "0" for name in names):
            left[queue_url.rsplit("/", 1)[1]] = attributes
    return left


def door_figures(results: list[tuple[str, float, float, int, float]], scans: list[tuple[float, float, int]]) -> dict:
    start = min((started for _, started, *_ in results), default=0.0)
    door_ms = [seconds * 1000 for _, _, seconds, _, _ in results]
    scanning = [(a - 0.5, b) for a, b, _ in scans]
    during = [s * 1000 for _, t, s, _, _ in results if any(a <= t <= b for a, b in scanning)]
    outside = [s * 1000 for _, t, s, _, _ in results if not any(a <= t <= b for a, b in scanning)]
    minutes: dict[int, list[float]] = {}
    for _, started, seconds, _, _ in results:
        minutes.setdefault(int((started - start) // 60), []).append(seconds * 1000)
    codes: dict[int, int] = {}
    for *_, status, _ in results:
        codes[status] = codes.get(status, 0) + 1
    return {
        "answers": codes,
        "door_ms": {"p50": pct(door_ms, 0.5), "p99": pct(door_ms, 0.99), "max": max(door_ms, default=None)},
        "door_p99_ms_each_minute": [pct(v, 0.99) for _, v in sorted(minutes.items())],
        "door_p99_ms_while_the_reader_scans": pct(during, 0.99),
        "door_p99_ms_otherwise": pct(outside, 0.99),
        "reader_scan_seconds_max": max((round(b - a, 2) for a, b, _ in scans), default=None),
        "sent_over_100_ms_late": sum(1 for *_, late in results if late > 0.1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("api")
    parser.add_argument("aws")
    parser.add_argument("--pid", type=int, required=True, help="the runtime's process")
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--for", dest="seconds", type=float, default=600.0)
    parser.add_argument("--read", nargs=3, metavar=("TAG", "OUT", "STOP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        read_stored(args.aws, *args.read)
        return 0
    if not 0 < args.rate <= 200 or not 0 < args.seconds <= 3600:
        parser.error("--rate must be in (0, 200] and --for in (0, 3600]")
    secrets = client(args.aws, "secretsmanager")
    secret_id = next(s["ARN"] for s in secrets.list_secrets()["SecretList"] if "meta" in s["Name"].lower())
    app_secret = json.loads(secrets.get_secret_value(SecretId=secret_id)["SecretString"])["app_secret"].encode()
    tag = f"IND{uuid.uuid4().hex[:6]}"
    scratch = tempfile.mkdtemp(prefix="independent-")
    out, stop = os.path.join(scratch, "stored.jsonl"), os.path.join(scratch, "stop")
    reader = subprocess.Popen([sys.executable, __file__, args.api, args.aws, "--pid", "0", "--read", tag, out, stop])
    runtime = Proc(args.pid)
    start, cpu_start = time.time(), runtime.cpu()
    memory: list[tuple[float, float]] = []
    sending = threading.Event()

    def watch() -> None:
        while not sending.wait(10):
            memory.append((time.time() - start, runtime.rss_mb()))

    threading.Thread(target=watch, daemon=True).start()
    results = send(args.api, app_secret, tag, args.rate, args.seconds)
    sending.set()
    end, cpu_end = time.time(), runtime.cpu()
    Path(stop).touch()
    reader.wait(timeout=120)
    stored, scans, twice = read_lines(out)
    sent_at = {wamid: started for wamid, started, *_ in results}
    waited = [stored[w] - sent_at[w] for w in stored if w in sent_at]
    summary = {
        "sent": len(results),
        **door_figures(results, scans),
        "stored": len(stored),
        "stored_twice": twice,
        "sent_to_stored_s": {"p50": pct(waited, 0.5), "p99": pct(waited, 0.99)},
        "runtime_cpu_ms_per_webhook": round((cpu_end - cpu_start) * 1000 / max(1, len(results)), 2),
        "runtime_cpu_share_of_machine_pct": round(
            (cpu_end - cpu_start) / (end - start) * 100 / (os.cpu_count() or 1), 1
        ),
        "runtime_rss_mb_at_2_min_and_end": [
            next((mb for t, mb in memory if t >= 120), None),
            memory[-1][1] if memory else None,
        ],
        "queues_not_empty_at_end": queues_left(args.aws),
    }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
