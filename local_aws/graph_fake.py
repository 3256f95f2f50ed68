"""The local runtime's Meta: the Graph API's send endpoints over HTTP on 127.0.0.1, an outbox of
what was sent, and the statuses WhatsApp sends back for each message.

- `POST /{version}/{phone-number-id}/messages` (WhatsApp Cloud API) and `POST /{version}/{page-id}/messages`
  (the Send API, Messenger and Instagram) take the bearer token the runtime stored in the access
  token's secret, and answer as Meta does: `{"messaging_product": "whatsapp", "contacts": [...],
  "messages": [{"id": "wamid...."}]}`, or `{"recipient_id": ..., "message_id": "m_..."}`.
- Errors are Meta's bodies (`{"error": {"message", "type", "code", "error_data", "fbtrace_id"}}`)
  with Meta's codes: rate limits 130429, 131056, 80007; 131047 outside the service window;
  131026 undeliverable; 190 for a token that is not the stored one, or every token while revoked.
- A WhatsApp send is addressed as the Cloud API takes it since WhatsApp usernames: a phone number
  in `to`, or a business-scoped user id (BSUID) in `recipient` (Meta's "Business-scoped user IDs"
  page; pywa's `send_message`). A `recipient` that is no BSUID, or a `to` that is no phone number,
  is Meta's 100 (Invalid parameter) and nothing is sent; a send to a BSUID is answered with the
  contact's `user_id`, and its statuses name the customer by `recipient_user_id` alone.
- `GET /{version}/me` answers the token's user (`{"id": ...}`) for the stored token, and 190 with
  Meta's OAuthException body for any other, or every token while revoked: the lane probe's check.
- For a WhatsApp message accepted, a `sent` status carrying its `biz_opaque_callback_data` is
  delivered to the pipeline's webhook, signed with the app secret, `status_delay_ms` later.

- `GET /{version}/{account-id}/subscribed_apps` answers which apps an account is subscribed to, as
  Meta does: for a Page or an Instagram account `{"data": [{"category", "link", "name", "id",
  "subscribed_fields": [...]}]}`, for a WhatsApp Business Account `{"data":
  [{"whatsapp_business_api_data": {"link", "name", "id"}}]}`; `POST` with `subscribed_fields`
  (Pages, Instagram) or none (WhatsApp) subscribes the app, answering `{"success": true}`. An id
  the fake does not know is Meta's 100 (subcode 33, `GraphMethodException`); `down` answers every
  request with Meta's 2 (service temporarily unavailable). Meta knows an account once it is
  registered in the runtime's process (`runtime.graph.add_account(id, product, fields)`), with the
  app subscribed to those fields, or to none (`subscribed=False`).

Set per run (`configure`, or the drive session's `configure_graph`): `latency_ms`; `error_code`
and `error_rate`; `messages_per_second` per sending number (beyond it in any one second, however the second is
placed: 130429); `pair_messages` in any `pair_seconds` from a number to one recipient (beyond it:
131056, Meta's pair rate limit; off unless set);
`lost_answer_rate`, the share of accepted sends whose answer never arrives (the message is in the
outbox and its status is delivered, but the connection is dropped after `hold_seconds`: a timeout
after the send); `after_send`, what every accepted send is answered with instead of its id (the
message is in the outbox and its statuses are delivered): `500` with Meta's body for code 1,
`502` with a gateway's HTML page, `504` with no body, `stall` (nothing for `hold_seconds`, then
the connection closed), `drop` (closed as soon as the body is read); `failed_code`, a `failed`
status with that code (Meta's `errors` entry) delivered after the `sent` one, as Meta reports a
message it took and could not deliver; `statuses` (off: no status comes back) and
`status_loss_rate`; `revoked` (every token refused with 190).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

VERSION = "v21.0"
ERRORS: dict[int, tuple[int, str, str]] = {
    130429: (429, "(#130429) Rate limit hit", "Cloud API message throughput has been reached."),
    131056: (
        429,
        "(#131056) (Business Account, Consumer Account) pair rate limit hit",
        "Too many messages sent from the sender phone number to the same recipient phone number in a short period.",
    ),
    80007: (429, "(#80007) Rate limit issues", "The WhatsApp Business Account has reached its rate limit."),
    131047: (
        400,
        "(#131047) Re-engagement message",
        "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
    ),
    131026: (400, "(#131026) Message Undeliverable", "Unable to deliver message."),
    131049: (
        400,
        "(#131049) This message was not delivered to maintain healthy ecosystem engagement.",
        "In order to maintain a healthy ecosystem engagement, the message failed to be delivered.",
    ),
    2: (503, "An unexpected error has occurred. Please retry your request later.", ""),
    190: (401, "Error validating access token: The session has been invalidated.", ""),
}
"""Meta's code: (HTTP status, message, error_data.details)."""
AFTER_SEND = ("", "500", "502", "504", "stall", "drop")
SYSTEM_USER_ID = "122100000000000001"
"""The id `GET /me` answers for the stored token: a system user's, as Meta gives one."""


@dataclass(frozen=True)
class GraphBehaviour:
    latency_ms: float = 0.0
    error_code: int | None = None
    error_rate: float = 0.0
    messages_per_second: float | None = None
    pair_messages: int | None = None
    pair_seconds: float = 6.0
    lost_answer_rate: float = 0.0
    hold_seconds: float = 0.3
    statuses: bool = True
    status_loss_rate: float = 0.0
    """The share of statuses never delivered (Meta gave up on the webhook)."""
    status_delay_ms: float = 200.0
    after_send: str = ""
    failed_code: int | None = None
    revoked: bool = False
    down: bool = False
    """Every request answered with Meta's 2, service temporarily unavailable (HTTP 503)."""

    def __post_init__(self) -> None:
        if self.error_code is not None and self.error_code not in ERRORS:
            raise ValueError(f"error_code must be one of Meta's: {', '.join(map(str, sorted(ERRORS)))}")
        if not all(0.0 <= rate <= 1.0 for rate in (self.error_rate, self.lost_answer_rate, self.status_loss_rate)):
            raise ValueError("error_rate, lost_answer_rate and status_loss_rate must be within 0..1")
        if self.after_send not in AFTER_SEND:
            raise ValueError(f"after_send must be one of {', '.join(repr(a) for a in AFTER_SEND)}")
        if self.failed_code is not None and self.failed_code not in ERRORS:
            raise ValueError(f"failed_code must be one of Meta's: {', '.join(map(str, sorted(ERRORS)))}")
        if self.messages_per_second is not None and self.messages_per_second <= 0:
            raise ValueError("messages_per_second must be > 0, or None for no limit")
        if self.pair_messages is not None and (self.pair_messages < 1 or self.pair_seconds <= 0):
            raise ValueError("pair_messages must be >= 1 and pair_seconds > 0, or pair_messages None for no limit")


@dataclass(frozen=True)
class Sent:
    """One message Meta accepted: the outbox's line."""

    channel: str
    """`whatsapp`, or `send_api` for Messenger and Instagram."""
    business_id: str
    recipient: str
    text: str
    message_id: str
    callback: str
    at: float
    answer_lost: bool = False


APP_ID = "100000000000001"
APP_NAME = "Lanes (local)"
PRODUCTS = ("page", "instagram", "whatsapp")


@dataclass
class Account:
    """A Page, Instagram account or WhatsApp Business Account as Meta knows it, and the fields the
    app is subscribed to on it (None: the app is not subscribed)."""

    product: str
    fields: tuple[str, ...] | None


@dataclass(frozen=True)
class Refused:
    business_id: str
    code: int
    at: float


@dataclass
class GraphFake:
    behaviour: GraphBehaviour = field(default_factory=GraphBehaviour)
    token: str = ""
    """The one access token accepted (what the runtime stored in the secret)."""
    deliver: Callable[[dict[str, Any]], Any] | None = None
    """Posts a signed delivery to the pipeline's webhook (the statuses)."""
    on_sent: Callable[[Sent], None] | None = None
    seed: int = 23
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _outbox: list[Sent] = field(default_factory=list, repr=False)
    _refused: list[Refused] = field(default_factory=list, repr=False)
    _windows: dict[str, deque[float]] = field(default_factory=dict, repr=False)
    _rng: random.Random = field(default_factory=random.Random, repr=False)
    _accounts: dict[str, Account] = field(default_factory=dict, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)
    _token_checks: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    # ------------------------------------------------------------------ control

    def configure(self, **changes: Any) -> GraphBehaviour:
        unknown = sorted(set(changes) - {f.name for f in fields(GraphBehaviour)})
        if unknown:
            raise ValueError(f"the Graph API has no setting {', '.join(unknown)}")
        with self._lock:
            self.behaviour = replace(self.behaviour, **changes)
            return self.behaviour

    def add_account(
        self, account_id: str, product: str, fields: tuple[str, ...] = (), *, subscribed: bool = True
    ) -> None:
        if product not in PRODUCTS:
            raise ValueError(f"product must be one of {', '.join(PRODUCTS)}")
        with self._lock:
            self._accounts[account_id] = Account(product, tuple(fields) if subscribed else None)

    def account(self, account_id: str) -> Account | None:
        with self._lock:
            return self._accounts.get(account_id)

    def outbox(self) -> list[Sent]:
        with self._lock:
            return list(self._outbox)

    def refused(self) -> list[Refused]:
        with self._lock:
            return list(self._refused)

    @property
    def url(self) -> str:
        assert self._server is not None, "the Graph API is not serving"
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}/{VERSION}"

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake._post(self)

            def do_GET(self) -> None:
                fake._get(self)

            def log_message(self, *_: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="graph-api", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ------------------------------------------------------------------ the API

    def _get(self, request: BaseHTTPRequestHandler) -> None:
        parts = [p for p in request.path.split("?")[0].split("/") if p]
        if parts == [VERSION, "me"]:
            self._me(request)
            return
        if len(parts) != 3 or parts[0] != VERSION or parts[2] != "subscribed_apps":
            self._unsupported(request, "get", parts)
            return
        if self._refused_outright(request, parts[1]):
            return
        account = self.account(parts[1])
        if account is None:
            self._unsupported(request, "get", parts)
            return
        self._answer(request, 200, {"data": _subscribed_apps(account)})

    def _subscribe(self, request: BaseHTTPRequestHandler, account_id: str) -> None:
        if self._refused_outright(request, account_id):
            return
        account = self.account(account_id)
        if account is None:
            self._unsupported(request, "post", ["", account_id, "subscribed_apps"])
            return
        query = parse_qs(request.path.partition("?")[2])
        length = int(request.headers.get("content-length") or 0)
        form = parse_qs(request.rfile.read(length).decode() if length else "")
        named = (query.get("subscribed_fields") or form.get("subscribed_fields") or [""])[0]
        fields = tuple(f for f in named.split(",") if f)
        if account.product != "whatsapp" and not fields:
            self._error(request, 400, 100, "(#100) The parameter subscribed_fields is required.", "")
            return
        with self._lock:
            account.fields = fields if account.product != "whatsapp" else ()
        self._answer(request, 200, {"success": True})

    def _refused_outright(self, request: BaseHTTPRequestHandler, business: str) -> bool:
        """Meta down, or a token that is not the stored one: answered, and True."""
        behaviour = self.behaviour
        if behaviour.down:
            self._refuse(request, business, 2)
            return True
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if behaviour.revoked or not self.token or bearer != self.token:
            self._refuse(request, business, 190)
            return True
        return False

    def _unsupported(self, request: BaseHTTPRequestHandler, method: str, parts: list[str]) -> None:
        """Meta's answer for an id it does not have (or will not show this token)."""
        object_id = parts[1] if len(parts) > 1 else ""
        message = (
            f"Unsupported {method} request. Object with ID '{object_id}' does not exist, cannot be loaded due to "
            "missing permissions, or does not support this operation. Please read the Graph API documentation at "
            "https://developers.facebook.com/docs/graph-api"
        )
        error = {
            "message": message,
            "type": "GraphMethodException",
            "code": 100,
            "error_subcode": 33,
            "fbtrace_id": "A" + secrets.token_hex(11),
        }
        self._answer(request, 400, {"error": error})

    def _post(self, request: BaseHTTPRequestHandler) -> None:
        behaviour = self.behaviour
        parts = [p for p in request.path.split("?")[0].split("/") if p]
        if len(parts) == 3 and parts[0] == VERSION and parts[2] == "subscribed_apps":
            self._subscribe(request, parts[1])
            return
        if behaviour.down:
            self._refuse(request, parts[1] if len(parts) > 1 else "", 2)
            return
        if len(parts) != 3 or parts[0] != VERSION or parts[2] != "messages":
            self._error(request, 400, 100, "Unsupported post request.", "")
            return
        business = parts[1]
        body = self._body(request)
        if body is None:
            return
        if behaviour.latency_ms:
            time.sleep(behaviour.latency_ms / 1000.0)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if behaviour.revoked or not self.token or bearer != self.token:
            self._refuse(request, business, 190)
            return
        code = self._injected(behaviour, business, _recipient(body))
        if code is not None:
            self._refuse(request, business, code)
            return
        sent = self._accept(business, body, behaviour)
        if sent is None:
            self._error(request, 400, 100, "(#100) Invalid parameter", "a text message needs a recipient and a body")
            return
        if sent.answer_lost or behaviour.after_send in ("stall", "drop"):
            # The message went out; its answer never reaches the caller.
            time.sleep(0.0 if behaviour.after_send == "drop" else behaviour.hold_seconds)
            request.close_connection = True
            return
        if behaviour.after_send:
            self._server_error(request, int(behaviour.after_send))
            return
        if sent.channel == "whatsapp":
            answer = {
                "messaging_product": "whatsapp",
                # A send to a BSUID is answered with its `user_id`, not a `wa_id` (pywa's SentMessage).
                "contacts": [{"input": sent.recipient, _contact_id(sent.recipient): sent.recipient}],
                "messages": [{"id": sent.message_id}],
            }
        else:
            answer = {"recipient_id": sent.recipient, "message_id": sent.message_id}
        self._answer(request, 200, answer)

    def _body(self, request: BaseHTTPRequestHandler) -> Any | None:
        """The send's JSON body, or None once Meta's error for it is answered."""
        length = int(request.headers.get("content-length") or 0)
        try:
            body = json.loads(request.rfile.read(length) or b"{}")
        except ValueError:
            self._error(request, 400, 100, "(#100) Invalid parameter", "the body is not JSON")
            return None
        wrong = _misaddressed(body)
        if wrong:
            self._error(request, 400, 100, "(#100) Invalid parameter", wrong)
            return None
        return body

    def _me(self, request: BaseHTTPRequestHandler) -> None:
        """`GET /{version}/me`: the token's own user (the lane probe's check of the token)."""
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        with self._lock:
            self._token_checks += 1
        if self.behaviour.revoked or not self.token or bearer != self.token:
            status, message, details = ERRORS[190]
            self._error(request, status, 190, message, details)
            return
        self._answer(request, 200, {"id": SYSTEM_USER_ID})

    @property
    def token_checks(self) -> int:
        """`GET /me` calls answered (the probe's)."""
        with self._lock:
            return self._token_checks

    def _injected(self, behaviour: GraphBehaviour, business: str, recipient: str) -> int | None:
        now = time.time()
        with self._lock:
            if behaviour.error_code is not None and self._rng.random() < behaviour.error_rate:
                return behaviour.error_code
            # A refused send counts against neither window: Meta did not send it.
            number = _recent(self._windows.setdefault(business, deque()), now, 1.0)
            if behaviour.messages_per_second is not None and len(number) >= behaviour.messages_per_second:
                return 130429
            pair = _recent(self._windows.setdefault(f"{business}>{recipient}", deque()), now, behaviour.pair_seconds)
            if behaviour.pair_messages is not None and recipient and len(pair) >= behaviour.pair_messages:
                return 131056
            number.append(now)
            pair.append(now)
        return None

    def _accept(self, business: str, body: Any, behaviour: GraphBehaviour) -> Sent | None:
        if not isinstance(body, dict):
            return None
        if body.get("messaging_product") == "whatsapp":
            channel, recipient = "whatsapp", _recipient(body)
            text = str((body.get("text") or {}).get("body") or "")
            message_id = "wamid." + secrets.token_hex(16)
        else:
            channel, recipient = "send_api", str((body.get("recipient") or {}).get("id") or "")
            text = str((body.get("message") or {}).get("text") or "")
            message_id = "m_" + secrets.token_hex(16)
        if not recipient or not text:
            return None
        with self._lock:
            lost = self._rng.random() < behaviour.lost_answer_rate
            status_lost = self._rng.random() < behaviour.status_loss_rate
            sent = Sent(
                channel,
                business,
                recipient,
                text,
                message_id,
                str(body.get("biz_opaque_callback_data") or ""),
                time.time(),
                lost,
            )
            self._outbox.append(sent)
        if self.on_sent is not None:
            self.on_sent(sent)
        if channel == "whatsapp" and behaviour.statuses and not status_lost and self.deliver is not None:
            threading.Timer(
                behaviour.status_delay_ms / 1000.0, self._statuses, args=(sent, behaviour.failed_code)
            ).start()
        return sent

    def _statuses(self, sent: Sent, failed_code: int | None) -> None:
        self._status(sent, "sent")
        if failed_code is not None:
            self._status(sent, "failed", failed_code)

    def _status(self, sent: Sent, name: str, code: int | None = None) -> None:
        status: dict[str, Any] = {
            "id": sent.message_id,
            "status": name,
            "timestamp": str(int(time.time())),
        }
        # Sent to a BSUID, the status names the customer by it; the number stays withheld.
        status["recipient_user_id" if BSUID.fullmatch(sent.recipient) else "recipient_id"] = sent.recipient
        if sent.callback:
            status["biz_opaque_callback_data"] = sent.callback
        if code is not None:
            _, message, details = ERRORS[code]
            title = message.split(") ", 1)[-1]
            status["errors"] = [{"code": code, "title": title, "message": title, "error_data": {"details": details}}]
        delivery = {
            "object": "whatsapp_business_account",
            "entry": [
                {
                    "id": sent.business_id,
                    "changes": [
                        {
                            "field": "messages",
                            "value": {
                                "messaging_product": "whatsapp",
                                "metadata": {"phone_number_id": sent.business_id},
                                "statuses": [status],
                            },
                        }
                    ],
                }
            ],
        }
        assert self.deliver is not None
        # A status the webhook refused is one Meta would retry; here it is lost, as if Meta gave up.
        with contextlib.suppress(Exception):
            self.deliver(delivery)

    def _server_error(self, request: BaseHTTPRequestHandler, status: int) -> None:
        """A 5xx after the message was taken: Meta's own 500 (code 1, "an unknown error"), or a
        gateway's 502 page or empty 504, which carry no Meta code at all."""
        if status == 500:
            error = {"message": "An unknown error has occurred.", "type": "OAuthException", "code": 1}
            self._answer(request, 500, {"error": {**error, "fbtrace_id": "A" + secrets.token_hex(11)}})
            return
        data = b"<html><body><h1>502 Bad Gateway</h1></body></html>" if status == 502 else b""
        request.send_response(status)
        request.send_header("content-type", "text/html")
        request.send_header("content-length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _refuse(self, request: BaseHTTPRequestHandler, business: str, code: int) -> None:
        with self._lock:
            self._refused.append(Refused(business, code, time.time()))
        status, message, details = ERRORS[code]
        self._error(request, status, code, message, details)

    def _error(self, request: BaseHTTPRequestHandler, status: int, code: int, message: str, details: str) -> None:
        error: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code}
        if code == 190:
            error["error_subcode"] = 460
        if code == 2:
            error["is_transient"] = True
        if details:
            error["error_data"] = {"messaging_product": "whatsapp", "details": details}
        error["fbtrace_id"] = "A" + secrets.token_hex(11)
        self._answer(request, status, {"error": error})

    def _answer(self, request: BaseHTTPRequestHandler, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("content-type", "application/json")
        request.send_header("content-length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)


def _subscribed_apps(account: Account) -> list[dict[str, Any]]:
    """`data` of GET /{id}/subscribed_apps, in Meta's shape for the account's product."""
    if account.fields is None:
        return []
    link = f"https://www.facebook.com/games/?app_id={APP_ID}"
    if account.product == "whatsapp":
        return [{"whatsapp_business_api_data": {"link": link, "name": APP_NAME, "id": APP_ID}}]
    return [
        {
            "category": "Business",
            "link": link,
            "name": APP_NAME,
            "id": APP_ID,
            "subscribed_fields": list(account.fields),
        }
    ]


def _recent(window: deque[float], now: float, seconds: float) -> deque[float]:
    while window and window[0] <= now - seconds:
        window.popleft()
    return window


BSUID = re.compile(r"[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}")
"""A WhatsApp business-scoped user id, or a parent one, as Meta's "Business-scoped user IDs" page
gives it; written here apart from the pipeline's own check, as Meta's is."""
PHONE = re.compile(r"\+?[0-9][0-9 ()-]*")


def _contact_id(recipient: str) -> str:
    return "user_id" if BSUID.fullmatch(recipient) else "wa_id"


def _misaddressed(body: Any) -> str:
    """What is wrong with a WhatsApp send's addressee, as Meta refuses it with #100: a `recipient`
    that is no BSUID, or a `to` that is no phone number (a BSUID goes in `recipient`). "" if nothing."""
    if not isinstance(body, dict) or body.get("messaging_product") != "whatsapp":
        return ""
    if "recipient" in body and not (isinstance(body["recipient"], str) and BSUID.fullmatch(body["recipient"])):
        return "recipient is not a business-scoped user ID"
    if "to" in body and not (isinstance(body["to"], str) and PHONE.fullmatch(body["to"])):
        return "to is not a phone number (a business-scoped user ID goes in recipient)"
    return ""


def _recipient(body: Any) -> str:
    """Who a send is to: WhatsApp's `to` (a phone number), else its `recipient` (a BSUID, for a
    customer without a phone number); the Send API's `recipient.id`."""
    if not isinstance(body, dict):
        return ""
    if body.get("messaging_product") == "whatsapp":
        return str(body.get("to") or body.get("recipient") or "")
    recipient = body.get("recipient")
    return str(recipient.get("id") or "") if isinstance(recipient, dict) else ""
