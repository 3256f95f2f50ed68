"""The custom resource that runs last in a deploy, against moto: it protects the tables from
deletion (and undoes that when its own create fails, so the rollback can delete them), and stops
again the mapping of every lane with a pause mark that the deploy set running."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from pipeline.adapters.cfn_response import FAILED, SUCCESS
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.handlers.after_deploy import create_handler
from stacks import runtime_env
from tests.support.aws import REGION, deploy, handler_clients
from tests.support.mappings import mapped_function

TABLES = ["webhook-log", "jobs", "state", "data", "accounts"]


class Guard:
    def __init__(self, mappings: dict[str, str], environ: dict[str, str]) -> None:
        self.mappings = mappings
        self.answers: list[tuple[str, str]] = []
        self.marks = PauseMarks(boto3.client("dynamodb", region_name=REGION), "state", lambda: 1.0)
        self._handle = create_handler(environ, clients=handler_clients(), respond=self._respond)

    def _respond(self, event: dict[str, Any], status: str, reason: str, physical: str) -> None:
        self.answers.append((status, reason))

    def run(self, request: str, tables: list[str] = TABLES) -> tuple[str, str]:
        self._handle(
            {
                "RequestType": request,
                "ResponseURL": "https://cloudformation-custom-resource-response.example/answer",
                "StackId": "lanes-prod",
                "RequestId": "r-1",
                "LogicalResourceId": "AfterDeploy",
                "PhysicalResourceId": "AfterDeploy-after-deploy",
                "ResourceProperties": {"Tables": tables, "StateTable": "state", "Mappings": self.mappings},
            },
            None,
        )
        return self.answers[-1]

    @staticmethod
    def protected() -> dict[str, bool]:
        client = boto3.client("dynamodb", region_name=REGION)
        return {t: client.describe_table(TableName=t)["Table"].get("DeletionProtectionEnabled", False) for t in TABLES}

    def mapping_state(self, lane: str) -> str:
        return str(
            boto3.client("lambda", region_name=REGION).get_event_source_mapping(UUID=self.mappings[lane])["State"]
        )


@pytest.fixture
def guard(aws, env_local):
    made = deploy(env_local)
    mappings = {lane: mapped_function(made.queue_arns[lane], f"lanes-prod-{lane}-consumer") for lane in ("ai", "bulk")}
    environ = {**runtime_env.after_deploy(env_local, made.resources), "AWS_REGION": REGION}
    return Guard(mappings, environ)


def test_a_first_create_ends_with_every_table_protected(guard):
    # Given tables created unprotected, as the template makes them
    assert not any(guard.protected().values())
    # When the create's last resource runs
    status, _ = guard.run("Create")
    # Then every table is protected, and CloudFormation is told so
    assert status == SUCCESS
    assert all(guard.protected().values())


def test_a_create_that_fails_here_leaves_the_tables_deletable_for_its_rollback(guard):
    # Given a table that cannot be protected (named wrongly, say), after four that can
    status, reason = guard.run("Create", tables=[*TABLES[:4], "no-such-table"])
    # Then the create fails with DynamoDB's reason, and the four are unprotected again
    assert status == FAILED
    assert "ResourceNotFoundException" in reason
    assert not any(guard.protected().values())


def test_an_update_stops_again_a_paused_lane_the_deploy_set_running_and_leaves_the_others(guard):
    # Given the ai lane paused by an operator, then its mapping enabled by a deploy's update, and bulk running
    guard.marks.paused_by_operator("ai")
    assert guard.mapping_state("ai") == "Enabled"
    # When the deploy's last resource runs
    status, reason = guard.run("Update")
    # Then ai is stopped again, its mark left as it was, and bulk still runs
    assert status == SUCCESS
    assert "paused ['ai']" in reason
    assert guard.mapping_state("ai") == "Disabled"
    assert guard.marks.read(["ai"])["ai"].by == "operator"
    assert guard.mapping_state("bulk") == "Enabled"


def test_a_lane_that_paused_itself_is_stopped_again_so_the_probe_checks_before_it_resumes(guard):
    guard.marks.paused_by_lane("ai", "model_refused")
    status, _ = guard.run("Update")
    assert status == SUCCESS
    assert guard.mapping_state("ai") == "Disabled"
    assert guard.marks.read(["ai"])["ai"].by == "lane"


def test_deleting_the_resource_changes_nothing(guard):
    guard.run("Create")
    guard.marks.paused_by_operator("ai")
    status, _ = guard.run("Delete")
    assert status == SUCCESS
    # Protection stays (a stack delete keeps the tables), and so does the running mapping
    assert all(guard.protected().values())
    assert guard.mapping_state("ai") == "Enabled"
