"""One local runtime, in its own process, for the end-to-end tests: they reach it only as
users do, through its HTTP port, the emulated AWS endpoint, and the operator CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from local_aws.client import PipelineClient
from ops.drive import lanectl
from ops.drive.launch import LaunchFailed, launch


@dataclass
class RunningPipeline:
    process: subprocess.Popen[str]
    api_url: str
    aws_endpoint: str
    outputs: dict[str, str]
    client: PipelineClient
    verify_token: str
    lines: list[str]

    def aws(self, service: str):
        return boto3.client(
            service,
            endpoint_url=self.aws_endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )

    def lanectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return lanectl(self.aws_endpoint, *args)


def start_pipeline(
    log_dir: Path, environ: dict[str, str] | None = None, *, webhook_throttle: str | None = None
) -> RunningPipeline:
    """`lanectl local` in a process of its own, once it says it is ready."""
    try:
        launched = launch(log_dir, environ, webhook_throttle=webhook_throttle)
    except LaunchFailed as exc:
        pytest.fail(str(exc))
    process, lines = launched.process, launched.lines
    endpoint = launched.aws_endpoint
    cloudformation = boto3.client(
        "cloudformation",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    stack = cloudformation.describe_stacks(StackName="lanes-local")["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    secrets = boto3.client(
        "secretsmanager",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    secret = json.loads(secrets.get_secret_value(SecretId=outputs["MetaSecretArn"])["SecretString"])
    return RunningPipeline(
        process=process,
        api_url=launched.api_url,
        aws_endpoint=endpoint,
        outputs=outputs,
        client=PipelineClient(launched.api_url, app_secret=secret["app_secret"]),
        verify_token=secret["verify_token"],
        lines=lines,
    )


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory) -> RunningPipeline:
    running = start_pipeline(tmp_path_factory.mktemp("runtime-logs"))
    process, lines = running.process, running.lines
    yield running
    # Ctrl-C, as a person stops it: it must exit cleanly and print its summary.
    process.send_signal(signal.SIGINT)
    try:
        code = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the local runtime did not stop on Ctrl-C")
    time.sleep(0.2)
    assert code == 0, "\n".join(lines[-20:])
    assert "Summary" in lines, "\n".join(lines[-20:])
