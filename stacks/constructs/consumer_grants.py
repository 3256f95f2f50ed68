"""What a lane's consumer may do to the tables and the sender key: what every consumer does (read
and finish the obligations that feed its lane, keep its markers, leases and counters in the state
table, commit its task's effects to the data table) and what its task does beyond that
(`TaskAccess`). The queue grants are the lane's own (lane.py)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager

from pipeline.domain.erasure import requests as erasure_rules
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from stacks.config.lanes import Lane
from stacks.config.models import LaneModel
from stacks.constructs.grants import grant_rows, grant_secret, keep_unexercised
from stacks.constructs.privacy import grant_erasure
from stacks.constructs.tables import WEBHOOK_LOG_ID, PipelineTables


@dataclass(frozen=True)
class TaskAccess:
    """What a task touches beyond the generic consumer."""

    keys_people: bool
    """It stores what it learns about a person under their hash: it reads the sender key."""
    reads_state: bool = False
    """`ctx.read`: one consistent GetItem on the state table (the ai task's turn marker)."""
    checks_state: bool = False
    """Its writes carry a Check on the state table (the newest-turn check): ConditionCheckItem."""
    reads_data: bool = False
    """`ctx.read` on the data table: GetItem (the ai turn reads the messages it answers; a send
    reads its reply, tasks/replies.py)."""


TASK_ACCESS = {
    "messages": TaskAccess(keys_people=True, checks_state=True),
    "engagement": TaskAccess(keys_people=True),
    # No Check: the ai turn's newest-turn guard is an Update of the marker (it notes `answered`).
    "ai": TaskAccess(keys_people=True, reads_state=True, reads_data=True),
    "bulk": TaskAccess(keys_people=False),
    "scheduled": TaskAccess(keys_people=False),
}
"""By catalogue task name (`LanePolicy.task`); a lane whose task is not here fails synthesis."""


def model_arns(model: LaneModel) -> list[str]:
    """What Converse with the lane's model id is asked of IAM: the model in the stack's region, or
    for an inference profile the profile and its model in whichever region the profile routes to."""
    if model.inference_profile:
        return [
            f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}:{Aws.ACCOUNT_ID}:inference-profile/{model.settings.model_id}",
            f"arn:{Aws.PARTITION}:bedrock:*::foundation-model/{model.foundation_model}",
        ]
    return [f"arn:{Aws.PARTITION}:bedrock:{Aws.REGION}::foundation-model/{model.settings.model_id}"]


def grant_model(function: lambda_.IFunction, model: LaneModel) -> None:
    """Converse is authorised as bedrock:InvokeModel, on exactly the lane's model."""
    function.add_to_role_policy(iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=model_arns(model)))


def grant_consumer(
    function: lambda_.IFunction,
    lane: Lane,
    tables: PipelineTables,
    sender_key: secretsmanager.ISecret,
    model: LaneModel | None = None,
    *,
    access_token: secretsmanager.ISecret | None = None,
    callback_key: secretsmanager.ISecret | None = None,
) -> None:
    try:
        access = TASK_ACCESS[lane.policy.task]
    except KeyError:
        raise ValueError(
            f"lane {lane.name}: task {lane.policy.task!r} has no TaskAccess in stacks/constructs/consumer_grants.py"
        ) from None
    # Every lane takes jobs (the jobs API admits a job to any lane): read its row, finish it.
    grant_rows(function, tables.jobs, ("dynamodb:BatchGetItem", "dynamodb:UpdateItem"))
    # Lanes the door routes to read their deliveries' rows (a body by reference too) and finish them.
    role = function.role
    assert role is not None
    if lane.name in WEBHOOK_LANES:
        grant_rows(function, tables.webhook_log, ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"))
        keep_unexercised(
            role,
            ("dynamodb:GetItem",),
            "a body stored in parts (over 350 kB) is read part by part (adapters/webhook_log.py load_body); "
            "the tests send such bodies to the messages lane only, and every webhook lane reads them the same way",
            resource=WEBHOOK_LOG_ID,
        )
    # Done-markers for internal work, dependency budgets and tenant caps (leases), drain counts.
    state = ["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    if access.reads_state:
        state.append("dynamodb:GetItem")
    if access.checks_state:
        state.append("dynamodb:ConditionCheckItem")
    grant_rows(function, tables.state, state)
    # Effects: a conditional put or update each, alone or in the done-mark's transaction.
    data = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
    if access.reads_data:
        data.append("dynamodb:GetItem")
    grant_rows(function, tables.data, data)
    if access.keys_people:
        grant_secret(function, sender_key)
    if lane.name == erasure_rules.LANE:
        grant_erasure(function, tables)
    if model is not None:
        grant_model(function, model)
    if access_token is not None:
        # Replies are sent through Meta with it (adapters/graph_api.py).
        grant_secret(function, access_token)
    if callback_key is not None:
        # Replies' references are signed (ai) or statuses' verified (messages) with it (adapters/callback_key.py).
        grant_secret(function, callback_key)
