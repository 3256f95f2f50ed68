"""A custom resource's answer to CloudFormation: one PUT of JSON to the request's pre-signed S3 URL.
Until it arrives CloudFormation waits (up to the resource's ServiceTimeout), so every path of the
handler ends here."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

SUCCESS, FAILED = "SUCCESS", "FAILED"
TIMEOUT_SECONDS = 10


def respond(event: dict[str, Any], status: str, reason: str, physical_id: str) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:1000],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
        }
    ).encode()
    url = str(event["ResponseURL"])
    if not url.startswith("https://"):
        raise ValueError("CloudFormation's response URL is not https")
    request = urllib.request.Request(  # noqa: S310 (https only, checked above)
        url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS):  # noqa: S310
        pass
