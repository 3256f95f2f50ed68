"""Least-privilege grants: each function gets the actions its code makes, on the resources it
makes them on, and nothing CDK's `grant_*` helpers add beside them (`grant_*_data` grants every
index, `grant_send_messages` and `grant_consume_messages` add GetQueueUrl and GetQueueAttributes,
a secret's `grant_read` adds DescribeSecret; the pipeline calls none of these).

Which grant each function used is recorded whenever the tests, the scenarios or the demo run
(local_aws/iam/ledger.py), and tests/grants/ fails on a grant no run used. A grant that must
stay although no local run can use it is kept with `keep_unexercised` and its reason, written into
the role's template metadata, where that test reads it."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs

from stacks.template_metadata import UNEXERCISED_GRANTS

SEND = ("sqs:SendMessage",)
"""SendMessage and SendMessageBatch alike."""
DEPTH = ("sqs:GetQueueAttributes",)
"""A lane's depth and oldest message, read by admission and the sweeper."""
CONSUME = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility")
"""Lambda's poller receives, deletes and reads the queue with the function's role; the consumer
changes a record's visibility for its backoff."""


def grant_rows(grantee: iam.IGrantable, table: dynamodb.ITable, actions: Iterable[str]) -> None:
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=sorted(set(actions)), resources=[table.table_arn])
    )


def grant_index_query(grantee: iam.IGrantable, table: dynamodb.ITable, index_name: str) -> None:
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{table.table_arn}/index/{index_name}"])
    )


def grant_queue(grantee: iam.IGrantable, queue: sqs.IQueue, actions: Iterable[str]) -> None:
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=sorted(set(actions)), resources=[queue.queue_arn])
    )


def grant_secret(grantee: iam.IGrantable, secret: secretsmanager.ISecret) -> None:
    """Read the secret's value: the functions never describe it."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[secret.secret_arn])
    )


def keep_unexercised(role: iam.IRole, actions: Iterable[str], reason: str, resource: str = "*") -> None:
    """Say why `role` keeps `actions` (on the resource of that logical ID, or any) though no local
    run uses them: a path the tests cannot reach, or AWS's own use of the role."""
    child = role.node.default_child
    assert isinstance(child, iam.CfnRole), f"{role} is not a role this stack defines"
    kept = list(child.get_metadata(UNEXERCISED_GRANTS) or [])
    kept.append({"actions": sorted(set(actions)), "resource": resource, "reason": reason})
    child.add_metadata(UNEXERCISED_GRANTS, kept)
