"""The requests the fuzzer sends: random bytes, headers, sizes, encodings and methods against the
webhook door and the jobs API, each marked with whether it carries a genuine credential.

A case is `signed` when it would authenticate: a webhook body signed with the app secret, or a
job request with a SigV4 header from a role granted the job's tenant. Every other case must leave
no row behind; the runner checks that. Unsigned webhook bodies are unique (random bytes or a
nonce), so the log id they would have (`wh-` + SHA-256 of the bytes) names them; unsigned jobs
name a tenant of their own (`fz-u-...`), signed ones `fz-s-...`.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from ops.drive.meta_payloads import page_comment, whatsapp_message, whatsapp_status
from stacks.config.environments import ENVIRONMENTS, LOCAL_PRODUCER

WEBHOOK = "/webhooks/meta"
DOOR_CAP = ENVIRONMENTS["local"].webhook.max_body_bytes
UNSIGNED_TENANT = "fz-u-"
SIGNED_TENANT = "fz-s-"
PARTNER = "partner-acme"
"""A local role granted only tenant `acme`: anything it posts for an fz- tenant must be refused."""
_CONTENT_TYPES = (
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/octet-stream",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "",
)
_TOKEN = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
_LATIN1 = "".join(chr(c) for c in range(0x20, 0x7F)) + "".join(chr(c) for c in range(0xA0, 0x100))


@dataclass
class Case:
    name: str
    target: str
    """webhook, jobs or other (an unknown path or method)."""
    method: str
    path: str
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    signed: bool = False

    @property
    def log_id(self) -> str:
        return "wh-" + hashlib.sha256(self.body).hexdigest()


class Cases:
    """A seeded stream of cases. `max_body` bounds the random bodies; the oversize case sends one
    byte over `door_cap`, the webhook door's limit."""

    def __init__(
        self, rng: random.Random, app_secret: str, api_url: str, *, max_body: int, door_cap: int = DOOR_CAP
    ) -> None:
        self._rng = rng
        self._secret = app_secret.encode()
        self._api_url = api_url.rstrip("/")
        self._max_body = max_body
        self._door_cap = door_cap
        self._makers: list[tuple[float, Callable[[], Case]]] = [
            (10, self._unsigned_webhook),
            (8, self._malformed_signature),
            (6, self._wrong_secret),
            (8, self._signed_garbage),
            (6, self._signed_meta_mutated),
            (3, self._oversize),
            (4, self._handshake),
            (8, self._unsigned_job),
            (6, self._foreign_tenant_job),
            (8, self._signed_job_garbage),
            (4, self._signed_valid_job),
            (4, self._job_status),
            (4, self._elsewhere),
        ]

    def next(self) -> Case:
        weights = [w for w, _ in self._makers]
        (make,) = self._rng.choices([m for _, m in self._makers], weights=weights)
        return make()

    # ------------------------------------------------------------------ pieces

    def _nonce(self) -> str:
        return f"{self._rng.getrandbits(128):032x}"

    def _size(self) -> int:
        return min(self._max_body, self._rng.choice((0, 1, 7, 64, 511, 4096, 65_536, 300_000)))

    def _bytes(self) -> bytes:
        return self._rng.randbytes(self._size())

    def _text_body(self) -> bytes:
        """Text in a random encoding, or broken: UTF-8, UTF-16, Latin-1, a BOM, invalid UTF-8, gzip."""
        text = "".join(self._rng.choice(_LATIN1 + "é漢字😀\u202e\ufeff") for _ in range(self._rng.randint(0, 200)))
        text += self._nonce()
        encoding = self._rng.choice(("utf-8", "utf-16", "latin-1", "bom", "broken", "gzip"))
        if encoding == "bom":
            return b"\xef\xbb\xbf" + text.encode()
        if encoding == "broken":
            return text.encode() + b"\xc3\x28\xff"
        if encoding == "gzip":
            return gzip.compress(text.encode())
        return text.encode(encoding, errors="replace")

    def _random_headers(self) -> list[tuple[str, str]]:
        headers = [("content-type", self._rng.choice(_CONTENT_TYPES))]
        for _ in range(self._rng.randint(0, 4)):
            name = "".join(self._rng.choice(_TOKEN) for _ in range(self._rng.randint(1, 20)))
            value = "".join(self._rng.choice(_LATIN1) for _ in range(self._rng.randint(0, 60))).strip()
            headers.append((name, value))
        if self._rng.random() < 0.2:
            headers.append(("content-encoding", self._rng.choice(("gzip", "br", "identity", "x-unknown"))))
        return headers

    def _sign(self, body: bytes, secret: bytes | None = None) -> str:
        return "sha256=" + hmac.new(secret or self._secret, body, hashlib.sha256).hexdigest()

    def _webhook(self, name: str, body: bytes, signature: str | None, *, signed: bool) -> Case:
        headers = self._random_headers()
        if signature is not None:
            headers.append(("x-hub-signature-256", signature))
        return Case(name, "webhook", "POST", WEBHOOK, body, headers, signed)

    def _job_body(self, tenant: str, *, valid: bool) -> bytes:
        if valid:
            document = {
                "lane": "bulk",
                "kind": "import.page",
                "tenant": tenant,
                "payload": {"import_id": self._nonce(), "page": 0, "rows": [{"id": "r1"}]},
            }
            return json.dumps(document).encode()
        shapes = [
            {"lane": self._rng.choice(("bulk", "ai", "nope", "", None, 7)), "tenant": tenant, "payload": {}},
            {"lane": "bulk", "kind": "import.page", "tenant": tenant, "payload": None},
            {"lane": "bulk", "kind": "import.page", "tenant": tenant, "payload": {"n": 10**60}},
            {"lane": "bulk", "kind": "k" * 200, "tenant": tenant, "payload": [1], "deadline": -1},
            {"lane": "bulk", "kind": "import.page", "tenant": tenant, "payload": {"a": "\ufffe"}, "x": 1},
        ]
        document: object = self._rng.choice(shapes)
        if self._rng.random() < 0.3:
            document = {"tenant": tenant, "deep": json.loads("[" * 60 + "]" * 60)}
        raw = json.dumps(document).encode()
        if self._rng.random() < 0.3:
            cut = self._rng.randint(0, len(raw))
            raw = raw[:cut] + self._rng.randbytes(self._rng.randint(0, 20)) + raw[cut:]
        return raw

    def _sigv4(
        self, method: str, path: str, body: bytes, headers: list[tuple[str, str]], role: str
    ) -> list[tuple[str, str]]:
        request = AWSRequest(method=method, url=self._api_url + path, data=body, headers=dict(headers))
        request.headers["host"] = self._api_url.split("://", 1)[1]
        SigV4Auth(Credentials(role, "local", "local"), "execute-api", "us-east-1").add_auth(request)
        return list(request.headers.items())

    # ------------------------------------------------------------------ webhook cases

    def _unsigned_webhook(self) -> Case:
        return self._webhook("webhook: no signature", self._text_body(), None, signed=False)

    def _malformed_signature(self) -> Case:
        body = self._text_body()
        good = self._sign(body)
        forms = [
            "",
            " ",
            good.upper(),
            good[:-1],
            good + "0",
            good.replace("sha256=", "sha1="),
            good.removeprefix("sha256="),
            good + "," + good,
            "sha256=" + "".join(self._rng.choice("0123456789abcdefxyz ") for _ in range(64)),
            "".join(self._rng.choice(_LATIN1) for _ in range(self._rng.randint(1, 100))),
        ]
        return self._webhook("webhook: malformed signature", body, self._rng.choice(forms), signed=False)

    def _wrong_secret(self) -> Case:
        body = self._text_body()
        return self._webhook("webhook: other secret", body, self._sign(body, self._rng.randbytes(16)), signed=False)

    def _signed_garbage(self) -> Case:
        body = self._bytes() if self._rng.random() < 0.5 else self._text_body()
        return self._webhook("webhook: signed garbage", body, self._sign(body), signed=True)

    def _signed_meta_mutated(self) -> Case:
        nonce = self._nonce()
        payload = self._rng.choice(
            (
                whatsapp_message(f"fz{nonce[:8]}", f"wamid.{nonce}", "hello"),
                whatsapp_status(f"fz{nonce[:8]}", f"wamid.{nonce}", self._rng.choice(("sent", "read", "??"))),
                page_comment(f"fz{nonce[:8]}", f"c-{nonce}", "nice"),
            )
        )
        raw = bytearray(json.dumps(payload).encode())
        for _ in range(self._rng.randint(0, 3)):
            raw[self._rng.randrange(len(raw))] = self._rng.randrange(256)
        return self._webhook("webhook: signed Meta payload, mutated", bytes(raw), self._sign(bytes(raw)), signed=True)

    def _oversize(self) -> Case:
        body = self._rng.randbytes(self._door_cap + 1)
        signed = self._rng.random() < 0.5
        return self._webhook("webhook: over the size cap", body, self._sign(body) if signed else None, signed=signed)

    def _handshake(self) -> Case:
        params = [("hub.mode", "subscribe"), ("hub.verify_token", self._nonce()), ("hub.challenge", self._nonce())]
        self._rng.shuffle(params)
        if self._rng.random() < 0.3:
            params.append(
                (self._rng.choice(("hub.mode", "hub.challenge")), base64.b64encode(self._rng.randbytes(9)).decode())
            )
        query = "&".join(f"{k}={v}" for k, v in params)
        path = f"{WEBHOOK}?{query}"
        return Case("webhook: handshake with a wrong token", "webhook", "GET", path, b"", self._random_headers())

    # ------------------------------------------------------------------ jobs cases

    def _unsigned_job(self) -> Case:
        body = self._job_body(UNSIGNED_TENANT + self._nonce()[:12], valid=True)
        headers = self._random_headers()
        if self._rng.random() < 0.5:
            headers.append(
                (
                    "authorization",
                    self._rng.choice(("Bearer x", "AWS4-HMAC-SHA256", "AWS4-HMAC-SHA256 Credential=/", "")),
                )
            )
        return Case("jobs: no SigV4", "jobs", "POST", "/jobs", body, headers)

    def _foreign_tenant_job(self) -> Case:
        body = self._job_body(UNSIGNED_TENANT + self._nonce()[:12], valid=True)
        headers = self._sigv4("POST", "/jobs", body, [("content-type", "application/json")], PARTNER)
        return Case("jobs: a tenant its caller is not granted", "jobs", "POST", "/jobs", body, headers)

    def _signed_job_garbage(self) -> Case:
        body = (
            self._job_body(SIGNED_TENANT + self._nonce()[:12], valid=False)
            if self._rng.random() < 0.7
            else self._bytes()
        )
        headers = self._sigv4("POST", "/jobs", body, self._random_headers(), LOCAL_PRODUCER)
        return Case("jobs: signed, malformed", "jobs", "POST", "/jobs", body, headers, signed=True)

    def _signed_valid_job(self) -> Case:
        body = self._job_body(SIGNED_TENANT + self._nonce()[:12], valid=True)
        headers = self._sigv4("POST", "/jobs", body, [("content-type", "application/json")], LOCAL_PRODUCER)
        return Case("jobs: signed, valid", "jobs", "POST", "/jobs", body, headers, signed=True)

    def _job_status(self) -> Case:
        job_id = self._rng.choice(("job-" + self._nonce(), self._nonce(), "job-" + "%00" * 5, "..", "x" * 300))
        path = f"/jobs/{job_id}"
        role = self._rng.choice((LOCAL_PRODUCER, PARTNER, None))
        headers = self._sigv4("GET", path, b"", [], role) if role else self._random_headers()
        return Case("jobs: status", "jobs", "GET", path, b"", headers, signed=role is not None)

    def _elsewhere(self) -> Case:
        method = self._rng.choice(("GET", "POST", "PUT", "DELETE", "PATCH"))
        paths = ["/", "/webhooks", "/webhooks/meta/x", "/jobs/a/b", "/%2e%2e/jobs", "/" + self._nonce()]
        if method in ("PUT", "DELETE", "PATCH"):
            paths += [WEBHOOK, "/jobs"]  # routes that exist, with a method they do not have
        path = self._rng.choice(paths)
        return Case("elsewhere: unknown route or method", "other", method, path, self._bytes(), self._random_headers())
