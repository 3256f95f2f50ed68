"""An event source mapping in moto's Lambda, standing for a lane's mapping in the template."""

from __future__ import annotations

import io
import json
import zipfile

import boto3

from tests.support.aws import REGION


def mapped_function(queue_arn: str, function: str, *, enabled: bool = True) -> str:
    """A function in moto's Lambda with the lane queue mapped to it, as the stack makes them; the
    mapping's UUID."""
    role = boto3.client("iam", region_name=REGION).create_role(
        RoleName=f"{function}-role",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ]
            }
        ),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return {}\n")
    client = boto3.client("lambda", region_name=REGION)
    client.create_function(
        FunctionName=function,
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return client.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=function, BatchSize=10, Enabled=enabled
    )["UUID"]
