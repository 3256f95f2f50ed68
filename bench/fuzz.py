"""`python -m bench.fuzz`: random requests at the local runtime's webhook door and jobs API, bounded
in count and time, then a look at what they left behind.

    python -m bench.fuzz                                   # its own runtime: 3000 requests or 300 s
    python -m bench.fuzz --requests 500 --seconds 60 --seed 7
    python -m bench.fuzz --url http://127.0.0.1:8787 --aws-endpoint http://127.0.0.1:5599   # a running one

Requests go to 127.0.0.1 only, one at a time, at most --rate a second (under the local routes'
throttles, so the doors answer rather than the throttle), and the run stops at --requests or
--seconds, whichever comes first. It prints counts by case and answer, and the two things that
must hold: no 5xx from either door (nor a request left unanswered), and no webhook-log row, job
row or queued-job count from a request that was not signed. Exit 1 if either fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3

from bench.fuzz_cases import UNSIGNED_TENANT, Case, Cases

TIMEOUT_SECONDS = 30
_SENT_BY_THE_CLIENT = {"content-length", "transfer-encoding", "connection", "expect"}

AwsClient = Callable[[str], Any]


@dataclass
class FuzzReport:
    seed: int
    sent: int = 0
    seconds: float = 0.0
    answers: Counter[tuple[str, int]] = field(default_factory=Counter)
    """(case name, status); status 0 is no answer (the connection failed)."""
    unsigned_webhooks: set[str] = field(default_factory=set)
    signed_webhooks: set[str] = field(default_factory=set)
    accepted_signed_webhooks: set[str] = field(default_factory=set)
    unsigned_rows: list[str] = field(default_factory=list)
    unsigned_job_rows: int = 0
    unsigned_counters: int = 0
    signed_rows_found: int = 0

    @property
    def statuses(self) -> Counter[int]:
        counts: Counter[int] = Counter()
        for (_, status), n in self.answers.items():
            counts[status] += n
        return counts

    @property
    def failures(self) -> list[str]:
        found = [f"{n} x {status} for {name}" for (name, status), n in sorted(self.answers.items()) if status >= 500]
        found += [f"{n} x no answer for {name}" for (name, status), n in sorted(self.answers.items()) if status == 0]
        if self.unsigned_rows:
            found.append(
                f"{len(self.unsigned_rows)} webhook-log row(s) from unsigned requests: {self.unsigned_rows[:3]}"
            )
        if self.unsigned_job_rows or self.unsigned_counters:
            found.append(f"{self.unsigned_job_rows} job row(s), {self.unsigned_counters} queued count(s) unsigned")
        return found

    def lines(self) -> list[str]:
        out = [f"fuzz (seed {self.seed}): {self.sent} requests in {self.seconds:.1f} s"]
        by_case: dict[str, Counter[int]] = {}
        for (name, status), n in self.answers.items():
            by_case.setdefault(name, Counter())[status] += n
        for name in sorted(by_case):
            counts = ", ".join(f"{status}: {n}" for status, n in sorted(by_case[name].items()))
            out.append(f"  {name:<46} {sum(by_case[name].values()):>5}  ({counts})")
        out.append("answers: " + ", ".join(f"{status}: {n}" for status, n in sorted(self.statuses.items())))
        out.append(
            f"unsigned webhook bodies {len(self.unsigned_webhooks)}: rows found {len(self.unsigned_rows)}; "
            f"unsigned jobs: rows {self.unsigned_job_rows}, queued counts {self.unsigned_counters}; "
            f"signed webhooks answered 200: {len(self.accepted_signed_webhooks)}, rows found {self.signed_rows_found}"
        )
        failures = self.failures
        out.append("FAILED: " + "; ".join(failures) if failures else "held: no 5xx, no row from an unsigned request")
        return out


def loopback(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.port is None:
        raise SystemExit(f"{url}: the fuzzer only ever sends to http://127.0.0.1:<port>")
    return parts.hostname, parts.port


def send(host: str, port: int, case: Case) -> int:
    """One request exactly as the case spells it (duplicate headers and all); 0 if unanswered."""
    connection = http.client.HTTPConnection(host, port, timeout=TIMEOUT_SECONDS)
    try:
        names = {name.lower() for name, _ in case.headers}
        connection.putrequest(case.method, case.path, skip_host="host" in names, skip_accept_encoding=True)
        for name, value in case.headers:
            if name.lower() not in _SENT_BY_THE_CLIENT:
                connection.putheader(name, value)
        connection.putheader("content-length", str(len(case.body)))
        connection.endheaders(case.body)
        response = connection.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        connection.close()


def run(
    url: str, app_secret: str, *, requests: int, seconds: float, rate: float, seed: int, max_body: int
) -> FuzzReport:
    host, port = loopback(url)
    cases = Cases(random.Random(seed), app_secret, url, max_body=max_body)
    report = FuzzReport(seed=seed)
    started = time.monotonic()
    while report.sent < requests and time.monotonic() - started < seconds:
        case = cases.next()
        status = send(host, port, case)
        report.sent += 1
        report.answers[(case.name, status)] += 1
        if case.target == "webhook" and case.method == "POST":
            (report.signed_webhooks if case.signed else report.unsigned_webhooks).add(case.log_id)
            if case.signed and status == 200:
                report.accepted_signed_webhooks.add(case.log_id)
        pause = started + report.sent / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    report.seconds = time.monotonic() - started
    return report


def _existing(client: Any, table: str, ids: set[str]) -> set[str]:
    found: set[str] = set()
    keys = sorted(ids)
    for start in range(0, len(keys), 100):
        request = {table: {"Keys": [{"id": {"S": k}} for k in keys[start : start + 100]], "ProjectionExpression": "id"}}
        while request:
            response = client.batch_get_item(RequestItems=request)
            found |= {item["id"]["S"] for item in response["Responses"].get(table, [])}
            request = response.get("UnprocessedKeys") or {}
    return found


def _scan_count(client: Any, table: str, expression: str, values: dict[str, Any]) -> int:
    count, start = 0, None
    while True:
        arguments: dict[str, Any] = {"TableName": table, "FilterExpression": expression, "Select": "COUNT"}
        arguments["ExpressionAttributeValues"] = values
        if start:
            arguments["ExclusiveStartKey"] = start
        page = client.scan(**arguments)
        count += page["Count"]
        start = page.get("LastEvaluatedKey")
        if not start:
            return count


def check(report: FuzzReport, aws: AwsClient, outputs: dict[str, str]) -> FuzzReport:
    """What the requests left: no row or count from an unsigned one (and the signed ones' rows)."""
    dynamodb = aws("dynamodb")
    unsigned_only = report.unsigned_webhooks - report.signed_webhooks
    report.unsigned_rows = sorted(_existing(dynamodb, outputs["WebhookTableName"], unsigned_only))
    report.signed_rows_found = len(_existing(dynamodb, outputs["WebhookTableName"], report.accepted_signed_webhooks))
    prefix = {":p": {"S": UNSIGNED_TENANT}}
    report.unsigned_job_rows = _scan_count(dynamodb, outputs["JobsTableName"], "begins_with(tenant, :p)", prefix)
    report.unsigned_counters = _scan_count(dynamodb, outputs["StateTableName"], "contains(pk, :p)", prefix)
    return report


def _aws(endpoint: str) -> AwsClient:
    def client(service: str) -> Any:
        return boto3.client(
            service,  # type: ignore[call-overload]
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )

    return client


def _outputs_and_secret(aws: AwsClient) -> tuple[dict[str, str], str]:
    stack = aws("cloudformation").describe_stacks(StackName="lanes-local")["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    secret = json.loads(aws("secretsmanager").get_secret_value(SecretId=outputs["MetaSecretArn"])["SecretString"])
    return outputs, str(secret["app_secret"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--rate", type=float, default=40, help="requests a second at most (default 40)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-body", type=int, default=3 * 1024 * 1024, help="largest body (default the 3 MiB cap)")
    parser.add_argument("--url", help="a running local API (default: start a runtime of its own)")
    parser.add_argument("--aws-endpoint", help="that runtime's emulated AWS endpoint")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    process, tmp = None, None
    if args.url:
        if not args.aws_endpoint:
            parser.error("--url needs --aws-endpoint")
        url, endpoint = args.url, args.aws_endpoint
    else:
        from ops.drive.launch import LaunchFailed, launch

        tmp = Path(tempfile.mkdtemp(prefix="lanes-fuzz-"))
        try:
            launched = launch(tmp / "logs", {"TMPDIR": str(tmp)}, own_session=True)
        except LaunchFailed as exc:
            raise SystemExit(str(exc)) from None
        process, url, endpoint = launched.process, launched.api_url, launched.aws_endpoint
    try:
        aws = _aws(endpoint)
        outputs, secret = _outputs_and_secret(aws)
        report = run(
            url, secret, requests=args.requests, seconds=args.seconds, rate=args.rate, seed=seed, max_body=args.max_body
        )
        time.sleep(2)  # anything a door was still writing
        check(report, aws, outputs)
    finally:
        if process is not None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.write("\n".join(report.lines()) + "\n")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
