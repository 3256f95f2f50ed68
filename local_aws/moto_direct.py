"""In-process calls to the emulator without the HTTP-shaped round trip.

With moto's mock on, a boto3 call in this process is serialized into an HTTP request, handed to
moto through botocore's send hook, rebuilt as a werkzeug request, routed, parsed back into
parameters, answered, serialized to HTTP and parsed again by botocore. For the calls the pipeline
makes on its hot path, this hook answers at botocore's `before-call` instead: moto's own response
class for the service runs the same action method (with moto's own parameter parser, validation,
backend, errors and serializer), and botocore's own parser turns its answer into the response the
caller gets. What is skipped is transport: the prepared request, the werkzeug environment, the
URL routing, the query-string guessing moto does on every body, and botocore's send-side events.

Only requests for AWS's own endpoints with moto's mock on take this path; anything else (an
endpoint URL, a service not listed) goes the usual way.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import urlsplit

SERVICES = {"dynamodb": "DynamoDB_20120810", "sqs": "AmazonSQS"}
_PATCHED = False
_parsers: dict[str, Any] = {}
_lock = threading.Lock()


def install() -> None:
    global _PATCHED
    if _PATCHED:
        return
    from botocore import handlers

    # Last of every `before-call` handler, so the ones that observe a call (the consumer times its
    # calls there) still see it; registered for every session made from now on.
    handlers.BUILTIN_HANDLERS.append(("before-call", answer, handlers.REGISTER_LAST))
    _PATCHED = True


def _response_class(service: str) -> Any:
    if service == "dynamodb":
        from moto.dynamodb.responses import DynamoHandler

        return DynamoHandler
    from moto.sqs.responses import SQSResponse

    return SQSResponse


def protocol_parser(protocol: str) -> Any:
    parser = _parsers.get(protocol)
    if parser is None:
        from botocore.parsers import create_parser

        with _lock:
            parser = _parsers.setdefault(protocol, create_parser(protocol))
    return parser


def answer(model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
    from moto.core.models import botocore_stubber

    if not botocore_stubber.enabled:
        return None
    host = urlsplit(params.get("url", "")).hostname or ""
    if not host.endswith(".amazonaws.com"):
        return None
    service = model.service_model.service_name
    protocol = model.service_model.resolved_protocol
    if service not in SERVICES or protocol != "json":
        return None
    status, headers, body = _dispatch(service, model, params, context.get("client_region") or "us-east-1")
    from botocore.awsrequest import AWSResponse
    from botocore.endpoint import convert_to_response_dict

    raw = body.encode("utf-8") if isinstance(body, str) else (body or b"")
    http = AWSResponse(params["url"], status, headers, RawBody(raw))
    response = convert_to_response_dict(http, model)
    parser = protocol_parser(protocol)
    parsed = parser.parse(response, model.output_shape)
    if status >= 300:
        # As botocore's endpoint does: a modeled error's own fields (a cancelled transaction's
        # CancellationReasons, say) come from a second pass with the error's shape.
        code = parsed.get("Error", {}).get("Code")
        shape = model.service_model.shape_for_error_code(code) if code else None
        if shape is not None:
            parsed.update(parser.parse(response, shape))
    return http, parsed


class RawBody:
    """A response body botocore can stream or read, for answers made without a socket."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body

    def read(self, *_: Any) -> bytes:
        return self._body


def _dispatch(service: str, model: Any, params: dict[str, Any], region: str) -> tuple[int, dict[str, str], Any]:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.exceptions import HTTPException
    from moto.core.parse import PROTOCOL_PARSERS
    from moto.core.utils import get_service_model
    from moto.utilities.utils import get_partition

    responder = _response_class(service)()
    body = params.get("body") or b""
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    from werkzeug.datastructures import Headers

    headers = Headers([(str(k), str(v)) for k, v in params.get("headers", {}).items()])
    if "X-Amz-Target" not in headers:
        headers["X-Amz-Target"] = f"{SERVICES[service]}.{model.name}"
    responder.headers = headers
    responder.response_headers = {"server": "amazon.com"}
    responder.body = text
    responder.raw_body = body
    responder.querystring = {}
    responder.data = {}
    responder.uri = params["url"]
    responder.path = "/"
    responder.method = "POST"
    responder.region = region
    responder.partition = get_partition(region)
    responder.uri_match = {}
    responder.current_account = DEFAULT_ACCOUNT_ID
    responder.access_key = "AKIAEXAMPLE"
    if responder.automated_parameter_parsing:
        operation = get_service_model(responder.boto3_service_name).operation_model(model.name)
        parser = PROTOCOL_PARSERS["json"](operation, map_type=responder.PROTOCOL_PARSER_MAP_TYPE)
        # Typed Any: the parser's request type wants a MultiDict of query values, and this request has none.
        request: Any = {
            "method": "POST",
            "values": {},
            "headers": headers,
            "body": body,
            "url_path": "/",
            "url_params": {},
        }
        responder.params = parser.parse(request)
    else:
        responder.params = json.loads(text) if text else {}
    try:
        return responder.call_action()
    except HTTPException as error:
        return error.code or 500, dict(error.get_headers() or []), error.get_body()
