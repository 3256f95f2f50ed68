"""A refused call, answered as the service answers it: its HTTP status, its error code and the
body its protocol carries, parsed by botocore's own parser, so the caller gets the same exception
(`AccessDeniedException`, `AccessDenied`, `AuthorizationError`) with the same fields as on AWS."""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape

from local_aws.moto_direct import RawBody, protocol_parser

_CODES = {
    # service: (HTTP status, error code)
    "dynamodb": (400, "AccessDeniedException"),
    "sqs": (403, "AccessDenied"),
    "secretsmanager": (400, "AccessDeniedException"),
    "kms": (400, "AccessDeniedException"),
    "ssm": (400, "AccessDeniedException"),
    "lambda": (403, "AccessDeniedException"),
    "cloudwatch": (403, "AccessDenied"),
    "sns": (403, "AuthorizationError"),
    "bedrock-runtime": (403, "AccessDeniedException"),
}


def error_code(service: str) -> str:
    return _CODES.get(service, (403, "AccessDenied"))[1]


def refusal(model: Any, url: str, message: str) -> tuple[Any, dict[str, Any]]:
    """What botocore's `before-call` returns to answer `model`'s call with AWS's refusal."""
    from botocore.awsrequest import AWSResponse
    from botocore.endpoint import convert_to_response_dict

    service = model.service_model.service_name
    status, code = _CODES.get(service, (403, "AccessDenied"))
    protocol = model.service_model.resolved_protocol
    headers: dict[str, str] = {"x-amzn-requestid": "00000000-0000-0000-0000-000000000000"}
    if protocol == "json":
        headers["content-type"] = "application/x-amz-json-1.0"
        body = json.dumps({"__type": f"com.amazon.coral.service#{code}", "message": message, "Message": message})
        if model.service_model.metadata.get("awsQueryCompatible") is not None:
            headers["x-amzn-query-error"] = f"{code};Sender"
    elif protocol == "rest-json":
        headers["x-amzn-errortype"] = code
        headers["content-type"] = "application/json"
        body = json.dumps({"Type": "User", "Message": message, "message": message})
    else:
        headers["content-type"] = "text/xml"
        body = (
            "<ErrorResponse><Error><Type>Sender</Type>"
            f"<Code>{code}</Code><Message>{escape(message)}</Message></Error>"
            "<RequestId>00000000-0000-0000-0000-000000000000</RequestId></ErrorResponse>"
        )
    http = AWSResponse(url, status, headers, RawBody(body.encode("utf-8")))
    response = convert_to_response_dict(http, model)
    parser = protocol_parser(protocol)
    parsed = parser.parse(response, model.output_shape)
    shape = model.service_model.shape_for_error_code(parsed.get("Error", {}).get("Code", code))
    if shape is not None:
        parsed.update(parser.parse(response, shape))
    return http, parsed
