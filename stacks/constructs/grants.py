"""Least-privilege table grants. CDK's `grant_*_data` helpers also grant every index
(`<table>/index/*`); each function here gets the row actions it uses on the table, and index
queries only on the one index it reads."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

READ = ("dynamodb:GetItem", "dynamodb:BatchGetItem")
CONDITIONAL_WRITE = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")
"""Also what TransactWriteItems checks, item by item."""


def grant_rows(grantee: iam.IGrantable, table: dynamodb.ITable, actions: Iterable[str]) -> None:
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=sorted(set(actions)), resources=[table.table_arn])
    )


def grant_index_query(grantee: iam.IGrantable, table: dynamodb.ITable, index_name: str) -> None:
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=["dynamodb:Query"], resources=[f"{table.table_arn}/index/{index_name}"])
    )
