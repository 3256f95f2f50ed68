"""Pipeline resources in moto, shaped as the stack shapes them, for unit tests.

The end-to-end tests deploy the synthesized template instead; these fixtures are for tests that
exercise one handler or adapter and want its tables and queues without a synth.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

import boto3
import botocore.session

from pipeline import schema, settings
from pipeline.adapters.clients import Clients
from stacks.config.environments import Environment
from stacks.runtime_env import Resources, jobs_callers

REGION = "us-east-1"
META_APP_SECRET = "test-app-secret"
META_ACCESS_TOKEN = "test-access-token"
META_PREVIOUS_APP_SECRET = "test-previous-app-secret"
META_VERIFY_TOKEN = "test-verify-token"
META_PREVIOUS_EXPIRES_AT = 1_800_000_000 + 24 * 3600
"""A day after the clock the door's tests start at: the previous secret is in force there."""
SENDER_KEY = "test-sender-key-0123456789abcdefghijklmnopqrstuv"
REPLY_CALLBACK_KEY = "test-callback-key-0123456789abcdefghijklmnopq"


def _sender_index() -> dict:
    return {
        "IndexName": schema.SENDER_INDEX,
        "KeySchema": [{"AttributeName": schema.SENDER_HASH, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }


def _pending_table(client, name: str, *, by_sender: bool) -> None:
    """An obligations table as the stack makes it: the webhook log has no sender index (an erasure
    scans it), the jobs table has one."""
    attributes = [
        {"AttributeName": schema.ID, "AttributeType": "S"},
        {"AttributeName": schema.PENDING_SHARD, "AttributeType": "S"},
        {"AttributeName": schema.PENDING_SINCE, "AttributeType": "N"},
    ]
    indexes = [
        {
            "IndexName": schema.PENDING_INDEX,
            "KeySchema": [
                {"AttributeName": schema.PENDING_SHARD, "KeyType": "HASH"},
                {"AttributeName": schema.PENDING_SINCE, "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
    ]
    if by_sender:
        attributes.append({"AttributeName": schema.SENDER_HASH, "AttributeType": "S"})
        indexes.append(_sender_index())
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=attributes,
        KeySchema=[{"AttributeName": schema.ID, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=indexes,
    )


def _state_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": schema.PK, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": schema.PK, "KeyType": "HASH"}],
    )


def _accounts_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.PK, "AttributeType": "S"},
            {"AttributeName": schema.SK, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": schema.PK, "KeyType": "HASH"},
            {"AttributeName": schema.SK, "KeyType": "RANGE"},
        ],
    )


def _data_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.PK, "AttributeType": "S"},
            {"AttributeName": schema.SK, "AttributeType": "S"},
            {"AttributeName": schema.SENDER_HASH, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": schema.PK, "KeyType": "HASH"},
            {"AttributeName": schema.SK, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[_sender_index()],
    )


@dataclass(frozen=True)
class Deployed:
    resources: Resources
    dlq_arns: dict[str, str]
    queue_arns: dict[str, str]
    grants: Any = None
    """The local template's grants over these resources, while they are enforced (roles.py)."""
    mapping_ids: dict[str, str] = field(default_factory=dict)
    """By lane: the event source mapping a test made in moto's Lambda for that lane's queue, which
    the template's mapping of the lane stands for (none by default: the harness polls itself)."""


def deploy(env: Environment) -> Deployed:
    """Create the pipeline's tables, lane queues (with redrive) and Meta secret in the active moto
    mock, with the settings the catalogue gives `env`."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    secrets = boto3.client("secretsmanager", region_name=REGION)
    _pending_table(dynamodb, "webhook-log", by_sender=False)
    _pending_table(dynamodb, "jobs", by_sender=True)
    _state_table(dynamodb, "state")
    _data_table(dynamodb, "data")
    _accounts_table(dynamodb, "accounts")

    queue_urls: dict[str, str] = {}
    dlq_urls: dict[str, str] = {}
    queue_arns: dict[str, str] = {}
    dlq_arns: dict[str, str] = {}
    for lane in env.lanes:
        dlq_url = sqs.create_queue(QueueName=f"{lane.name}-dlq", Attributes={"MessageRetentionPeriod": "1209600"})[
            "QueueUrl"
        ]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        url = sqs.create_queue(
            QueueName=lane.name,
            Attributes={
                "VisibilityTimeout": str(lane.visibility_timeout_seconds),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": lane.policy.max_receives}
                ),
            },
        )["QueueUrl"]
        queue_urls[lane.name] = url
        dlq_urls[lane.name] = dlq_url
        dlq_arns[lane.name] = dlq_arn
        queue_arns[lane.name] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]

    secret_arn = secrets.create_secret(
        Name="meta",
        SecretString=json.dumps(
            {
                "app_secret": META_APP_SECRET,
                "previous_app_secret": META_PREVIOUS_APP_SECRET,
                "previous_expires_at": META_PREVIOUS_EXPIRES_AT,
                "verify_token": META_VERIFY_TOKEN,
            }
        ),
    )["ARN"]
    sender_key_arn = secrets.create_secret(Name="sender-key", SecretString=json.dumps({"sender_hash_key": SENDER_KEY}))[
        "ARN"
    ]
    access_token_arn = secrets.create_secret(
        Name="meta-access-token", SecretString=json.dumps({"access_token": META_ACCESS_TOKEN})
    )["ARN"]
    callback_key_arn = secrets.create_secret(
        Name="reply-callback-key", SecretString=json.dumps({"callback_key": REPLY_CALLBACK_KEY})
    )["ARN"]
    # The jobs API's callers, kept as the stack keeps them (stacks/constructs/jobs_callers.py).
    jobs_callers_arn = secrets.create_secret(Name="jobs-callers", SecretString=jobs_callers(env))["ARN"]
    resources = Resources(
        webhook_table="webhook-log",
        jobs_table="jobs",
        state_table="state",
        data_table="data",
        accounts_table="accounts",
        queue_urls=queue_urls,
        dlq_urls=dlq_urls,
        secret_arn=secret_arn,
        sender_key_arn=sender_key_arn,
        access_token_arn=access_token_arn,
        callback_key_arn=callback_key_arn,
        jobs_callers_arn=jobs_callers_arn,
    )
    return Deployed(resources=resources, dlq_arns=dlq_arns, queue_arns=queue_arns)


def http_api_event(
    method: str,
    path: str = "/",
    *,
    body: str | None = None,
    headers: dict[str, str] | None = None,
    raw_query: str = "",
    query: dict[str, str] | None = None,
    is_base64: bool = False,
    path_parameters: dict[str, str] | None = None,
    caller: str | None = None,
    client_subject: str | None = None,
) -> dict:
    """An API Gateway HTTP API event (payload format 2.0), as a function behind a route gets it;
    `caller` is the IAM caller's ARN that an IAM-authorised route adds, `client_subject` the
    subject of the client certificate a mutual TLS domain verified."""
    event: dict = {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": {name.lower(): value for name, value in (headers or {}).items()},
        "requestContext": {"http": {"method": method, "path": path}, "requestId": "test-request"},
        "isBase64Encoded": is_base64,
    }
    if query is not None:
        event["queryStringParameters"] = query
    if body is not None:
        event["body"] = body
    if path_parameters is not None:
        event["pathParameters"] = path_parameters
    if caller is not None:
        event["requestContext"]["authorizer"] = {"iam": {"userArn": caller, "accountId": caller.split(":")[4]}}
    if client_subject is not None:
        event["requestContext"]["domainName"] = "hooks.example.com"
        event["requestContext"]["authentication"] = {
            "clientCert": {
                "clientCertPem": "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----",
                "subjectDN": client_subject,
                "issuerDN": "CN=DigiCert Global G2 TLS RSA SHA256 2020 CA1,O=DigiCert Inc,C=US",
                "serialNumber": "0a:1b:2c",
                "validity": {"notBefore": "Jan  1 00:00:00 2026 GMT", "notAfter": "Jan  1 00:00:00 2027 GMT"},
            }
        }
    return event


def function_url_event(
    method: str,
    path: str = "/",
    *,
    body: str | None = None,
    headers: dict[str, str] | None = None,
    raw_query: str = "",
    is_base64: bool = False,
) -> dict:
    """A Lambda function URL event with AuthType NONE, shaped as Lambda's guide shows it
    (urls-invocation, request payload): payload format 2.0 with the API Gateway-only keys set to
    sentinels (`routeKey` and `stage` "$default"), `pathParameters` and `stageVariables` null, no
    authorizer, the caller's TLS and address in `x-amzn-*`/`x-forwarded-*` headers. Lambda
    base64-encodes a body it does not take for text, whatever its content type says."""
    url_id = "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6"
    domain = f"{url_id}.lambda-url.{REGION}.on.aws"
    sent = {
        "content-length": str(len(body or "")),
        "x-amzn-tls-cipher-suite": "TLS_AES_128_GCM_SHA256",
        "x-amzn-tls-version": "TLSv1.3",
        "x-amzn-trace-id": "Root=1-6750b8c2-2c3f5a1e6b7d8c9e0f1a2b3c",
        "x-forwarded-proto": "https",
        "host": domain,
        "x-forwarded-port": "443",
        "x-forwarded-for": "173.252.127.1",
        "accept-encoding": "deflate, gzip",
        "user-agent": "facebookexternalua",
        **{name.lower(): value for name, value in (headers or {}).items()},
    }
    event: dict = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": sent,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": url_id,
            "domainName": domain,
            "domainPrefix": url_id,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "173.252.127.1",
                "userAgent": "facebookexternalua",
            },
            "requestId": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "routeKey": "$default",
            "stage": "$default",
            "time": "04/Dec/2026:04:10:00 +0000",
            "timeEpoch": 1796357400000,
        },
        "pathParameters": None,
        "stageVariables": None,
        "isBase64Encoded": is_base64,
    }
    if raw_query:
        event["queryStringParameters"] = {k: ",".join(v) for k, v in parse_qs(raw_query).items()}
    if body is not None:
        event["body"] = body
    return event


class AwsCalls:
    """Records every AWS API call made through the clients it watches (a botocore `before-call`
    hook: one entry per operation, however many HTTP retries it takes), and can make chosen
    operations fail as the service would, without reaching moto."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._faults: dict[str, tuple[int, str]] = {}

    def watch(self, *clients) -> AwsCalls:
        for client in clients:
            client.meta.events.register("before-call", self._before_call)
        return self

    def _before_call(self, model, **_):
        name = f"{model.service_model.service_name}.{model.name}"
        self.calls.append(name)
        fault = self._faults.get(name)
        if fault is None:
            return None
        status, code = fault
        return SimpleNamespace(status_code=status, headers={}), {"Error": {"Code": code, "Message": "injected"}}

    def fail(self, operation: str, code: str = "InternalServerError", status: int = 500) -> None:
        """Make `service.Operation` (e.g. "dynamodb.PutItem") fail with `code` until healed."""
        self._faults[operation] = (status, code)

    def heal(self, operation: str) -> None:
        self._faults.pop(operation, None)

    def reset(self) -> None:
        self.calls.clear()


@functools.cache
def _shared_botocore_session() -> botocore.session.Session:
    return botocore.session.get_session()


def handler_clients(environ: Mapping[str, str] | None = None) -> Clients:
    """Clients for one handler under test, made inside the active moto mock, signing with the
    credentials `environ` gives the function (its role's, from the environ fixtures). They share
    one botocore session, so the service models are parsed once per run rather than once per test
    (~85 ms each); each client still has its own event hooks, so AwsCalls counts per handler."""
    session = boto3.session.Session(botocore_session=_shared_botocore_session(), region_name=REGION)
    return Clients(region=REGION, credentials=settings.credentials(environ or {}), _session=session)
