"""The command line itself: environments, where AWS is, the stack's outputs, and delegation."""

from __future__ import annotations

import socket
import sys
import types

from ops.aws import LOCAL_ENDPOINT, target
from ops.cli import Runtime, run
from ops.output import Console
from ops.resolve import output_prefix
from stacks.config.environments import ENVIRONMENTS

from .support import deploy_stack, envelope, park


def test_help_lists_commands_and_exit_codes(lanectl):
    result = lanectl("--help")

    assert result.code == 0
    for command in ("dlq", "lane", "plan", "preflight", "local", "demo"):
        assert command in result.out
    assert "4 nothing to do (empty DLQ)" in result.out


def test_unknown_environment_exits_2(lanectl):
    result = lanectl("dlq", "list", "--env", "qa")

    assert result.code == 2
    assert result.err == "lanectl: error: unknown environment 'qa'; valid environments: dev, local, prod, staging\n"


def test_env_before_the_command_works_too(dev_stack, lanectl):
    assert lanectl("--env", "dev", "dlq", "list").code == 0


def test_env_from_the_environment_variable(dev_stack, capsys):
    runtime = Runtime(console=Console(), environ={"LANES_ENV": "dev", "AWS_REGION": "us-east-1"})

    assert run(["dlq", "list"], runtime) == 0
    assert capsys.readouterr().out.startswith("dead-letter queues of lanes-dev")


def test_missing_action_and_stray_arguments_exit_2(lanectl):
    assert lanectl("dlq").code == 2
    result = lanectl("plan", "prod", "--frobnicate")
    assert result.code == 2
    assert "unrecognized arguments: --frobnicate" in result.err


def test_stack_not_deployed_exits_3(aws, lanectl):
    result = lanectl("dlq", "list", "--env", "staging")

    assert result.code == 3
    assert result.err == (
        "lanectl: error: stack lanes-staging does not exist in us-east-1; deploy with `make deploy ENV=staging`\n"
    )


def test_stack_without_an_expected_output_exits_3(aws, lanectl):
    deploy_stack(ENVIRONMENTS["dev"], drop_outputs=("BulkDlqUrl",))

    result = lanectl("dlq", "list", "--env", "dev")

    assert result.code == 3
    assert "stack lanes-dev has no output BulkDlqUrl" in result.err


def test_no_credentials_exits_3(monkeypatch, tmp_path, lanectl):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    result = lanectl("dlq", "list", "--env", "prod", "--region", "eu-west-1")

    assert result.code == 3
    assert "no AWS credentials found" in result.err


def test_unreachable_local_endpoint_exits_3_with_a_hint(lanectl):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = lanectl("dlq", "list", "--env", "local", "--endpoint-url", f"http://127.0.0.1:{port}")

    assert result.code == 3
    assert f"cannot reach http://127.0.0.1:{port}" in result.err
    assert "is `lanectl local` running?" in result.err


def test_where_each_environment_points():
    local, prod = ENVIRONMENTS["local"], ENVIRONMENTS["prod"]
    assert target(local, endpoint_url=None, region=None, profile=None, environ={}).endpoint_url == LOCAL_ENDPOINT
    assert LOCAL_ENDPOINT == "http://127.0.0.1:5599"
    from_variable = target(
        local, endpoint_url=None, region=None, profile=None, environ={"LANES_ENDPOINT_URL": "http://127.0.0.1:7000"}
    )
    assert from_variable.endpoint_url == "http://127.0.0.1:7000"
    flag = target(
        local,
        endpoint_url="http://h:1",
        region=None,
        profile=None,
        environ={"LANES_ENDPOINT_URL": "http://127.0.0.1:7000"},
    )
    assert flag.endpoint_url == "http://h:1"
    aws = target(prod, endpoint_url=None, region=None, profile=None, environ={"AWS_REGION": "eu-west-1"})
    assert (aws.endpoint_url, aws.region) == (None, "eu-west-1")


def test_no_region_exits_2(lanectl, monkeypatch):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)

    result = lanectl("dlq", "list", "--env", "prod")

    assert result.code == 2
    assert "no AWS region for prod" in result.err


def test_against_an_emulator_over_http(lanectl, emulator_endpoint):
    # Given an emulator on localhost holding lanes-local (as `lanectl local` serves it)
    endpoint = emulator_endpoint
    stack = deploy_stack(ENVIRONMENTS["local"], endpoint_url=endpoint)
    park(stack.clients["sqs"], stack.lane("ai").dlq_url, body=envelope("job-1", "acme", lane="ai"), reason="x")

    # When the CLI is pointed at it
    listed = lanectl("dlq", "list", "--env", "local", "--endpoint-url", endpoint)
    moved = lanectl("dlq", "redrive", "ai", "--env", "local", "--endpoint-url", endpoint)

    # Then it finds the stack there, and redrives by a paced move (the emulator has no move tasks)
    assert listed.code == 0, listed.err
    assert [line.split()[:2] for line in listed.out.splitlines() if line.startswith("ai ")] == [["ai", "1"]]
    assert moved.code == 0, moved.err
    assert "paced move (this backend has no StartMessageMoveTask)" in moved.out
    assert "done: moved 1 message(s)" in moved.out


def test_output_keys_match_the_stack():
    from stacks.constructs.lane import lane_id  # imports aws_cdk: only here

    for lane in ENVIRONMENTS["prod"].lanes:
        assert output_prefix(lane.name) == lane_id(lane.name)
    assert output_prefix("bulk_import") == lane_id("bulk_import") == "BulkImport"


def test_local_is_delegated_with_its_own_options(lanectl, monkeypatch):
    calls = []
    fake = types.ModuleType("ops.commands.local")
    fake.add_arguments = lambda parser: parser.add_argument("--port", type=int, default=8787)
    fake.main = lambda args: calls.append(args) or 7
    monkeypatch.setitem(sys.modules, "ops.commands.local", fake)

    result = lanectl("local", "--port", "9000", "--env", "local")

    assert result.code == 7
    assert (calls[0].port, calls[0].env) == (9000, "local")


def test_a_missing_delegate_exits_2(lanectl, monkeypatch):
    monkeypatch.setitem(sys.modules, "ops.demo.run", None)

    result = lanectl("demo")

    assert result.code == 2
    assert "`lanectl demo` is not available in this checkout (ops/demo/run.py is missing)" in result.err


def test_the_local_drive_finds_a_lane_named_with_underscores_by_the_stacks_spelling():
    from types import SimpleNamespace

    from ops.drive.reach import Reach

    outputs = {"BulkImportQueueUrl": "queue", "BulkImportDlqUrl": "dlq", "BulkImportFunctionName": "function"}
    reach = Reach(SimpleNamespace(deployment=SimpleNamespace(outputs=outputs)))

    assert (reach.queue_url("bulk_import"), reach.queue_url("bulk_import", dlq=True)) == ("queue", "dlq")
    assert reach.function_name("bulk_import") == "function"
