"""`lanectl auto-reply off|on`: an operator's hand on the model's own replies, for a tenant or one
conversation, kept where every turn auto-reply starts reads it (tasks/reply_holds.py)."""

from __future__ import annotations

import dataclasses

import boto3
import pytest

from ops.errors import USAGE
from pipeline import schema
from pipeline.adapters import items
from pipeline.domain import senders
from pipeline.settings.auto_reply import AutoReplySettings, TenantAutoReply
from pipeline.tasks.reply_holds import hold_key, tenant_switch_key
from stacks.config import environments
from tests.support.aws import REGION

from .support import SENDER_KEY, deploy_stack

TENANT = "shop-9"
CUSTOMER = "16505551234"


@pytest.fixture
def stack(aws, monkeypatch):
    """prod, with one tenant given auto-reply (prod itself ships with none)."""
    env = dataclasses.replace(
        environments.ENVIRONMENTS["prod"], auto_reply=AutoReplySettings(tenants={TENANT: TenantAutoReply()})
    )
    monkeypatch.setitem(environments.ENVIRONMENTS, "prod", env)
    stack = deploy_stack(env)
    # The operator stack's template makes only the state table; the data table is made as the stack does.
    stack.clients["dynamodb"].create_table(
        TableName=_table(stack, "DataTableName"),
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.PK, "AttributeType": "S"},
            {"AttributeName": schema.SK, "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": schema.PK, "KeyType": "HASH"}, {"AttributeName": schema.SK, "KeyType": "RANGE"}],
    )
    return stack


def _table(stack, output: str) -> str:
    described = boto3.client("cloudformation", region_name=REGION).describe_stacks(StackName=stack.name)
    return next(o["OutputValue"] for o in described["Stacks"][0]["Outputs"] if o["OutputKey"] == output)


def _item(stack, output: str, key: dict) -> dict | None:
    raw = stack.clients["dynamodb"].get_item(
        TableName=_table(stack, output), Key=items.to_item(key), ConsistentRead=True
    )
    return items.from_item(raw.get("Item"))


def test_a_tenant_is_turned_off_and_on(stack, lanectl):
    # When an operator turns the tenant's auto-reply off
    off = lanectl("auto-reply", "off", "--tenant", TENANT, "--env", "prod")
    # Then its switch is there for the turns to find
    assert off.code == 0, off.err
    assert f"auto-reply off for tenant {TENANT}" in off.out
    assert _item(stack, "StateTableName", tenant_switch_key(TENANT)) is not None
    # And on again removes it
    on = lanectl("auto-reply", "on", "--tenant", TENANT, "--env", "prod")
    assert on.code == 0, on.err
    assert _item(stack, "StateTableName", tenant_switch_key(TENANT)) is None


def test_a_conversation_is_turned_off_and_on_again_clearing_an_opt_out(stack, lanectl):
    # Given the customer had opted out
    key = hold_key(TENANT, CUSTOMER)
    stack.clients["dynamodb"].put_item(
        TableName=_table(stack, "DataTableName"), Item=items.to_item({**key, "opted_out_at": 1})
    )
    # When an operator turns their conversation off, then on
    off = lanectl("auto-reply", "off", "--tenant", TENANT, "--conversation", CUSTOMER, "--env", "prod")
    assert off.code == 0, off.err
    held = _item(stack, "DataTableName", key)
    assert held is not None
    assert held["off_at"] > 0
    # Then the hold carries the customer's hash (their erasure finds it), and the line not their id
    assert held[schema.SENDER_HASH] == senders.sender_hash(SENDER_KEY.encode(), CUSTOMER)
    assert CUSTOMER not in off.out
    on = lanectl("auto-reply", "on", "--tenant", TENANT, "--conversation", CUSTOMER, "--env", "prod")
    assert on.code == 0, on.err
    held = _item(stack, "DataTableName", key)
    assert held is not None
    assert "off_at" not in held
    assert "opted_out_at" not in held


def test_a_tenant_without_auto_reply_is_refused_by_name(stack, lanectl):
    result = lanectl("auto-reply", "off", "--tenant", "acme", "--env", "prod")
    assert result.code == USAGE
    assert "no auto-reply for tenant 'acme' (configured: shop-9)" in result.err
