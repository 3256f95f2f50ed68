"""Tables, queues and the secret: every property the design asks for, in every environment, and
logical IDs that never move (a moved ID replaces a table or a queue and its messages)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from aws_cdk.assertions import Match, Template

from pipeline import schema
from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS, EdgeConfig
from stacks.constructs.lane import dlq_logical_id, queue_logical_id
from stacks.runtime_env import stack_name

pytestmark = pytest.mark.xdist_group("synth")


def _pinned_ids(env) -> dict[str, str]:
    ids = {
        "WebhookLogTable": "AWS::DynamoDB::Table",
        "JobsTable": "AWS::DynamoDB::Table",
        "StateTable": "AWS::DynamoDB::Table",
        "DataTable": "AWS::DynamoDB::Table",
        "AccountsTable": "AWS::DynamoDB::Table",
        "MetaSecret": "AWS::SecretsManager::Secret",
        "SenderKey": "AWS::SecretsManager::Secret",
    }
    for lane in env.lanes:
        ids[queue_logical_id(lane.name)] = "AWS::SQS::Queue"
        ids[dlq_logical_id(lane.name)] = "AWS::SQS::Queue"
    return ids


def test_stateful_logical_ids_are_pinned(synthesized):
    resources = synthesized.template["Resources"]
    for logical_id, resource_type in _pinned_ids(synthesized.env).items():
        assert logical_id in resources, f"{logical_id} moved or vanished"
        assert resources[logical_id]["Type"] == resource_type
    assert queue_logical_id("messages") == "MessagesQueue"
    assert dlq_logical_id("ai") == "AiDeadLetterQueue"


KEEPS_DATA = ("AWS::DynamoDB::Table", "AWS::SecretsManager::Secret", "AWS::KMS::Key", "AWS::Logs::LogGroup")
"""With the lane queues and dead-letter queues, what an environment that keeps its data keeps."""


def _policies(synthesized) -> dict[str, tuple[str, str]]:
    """Deletion and update-replace policies of every resource that keeps data."""
    resources = synthesized.template["Resources"]
    kept = set(_pinned_ids(synthesized.env)) | {i for i, r in resources.items() if r["Type"] in KEEPS_DATA}
    return {
        i: (resources[i].get("DeletionPolicy", "Delete"), resources[i].get("UpdateReplacePolicy", "Delete"))
        for i in kept
    }


def test_prod_keeps_its_data_after_the_stack_but_not_after_a_failed_first_create(synth_env):
    # Given prod: its tables, lane queues and dead-letter queues, secrets, topic key and log groups
    prod = synth_env("prod")
    kept = _policies(prod)
    assert {prod.resource(i)["Type"] for i in kept} == {"AWS::SQS::Queue", *KEEPS_DATA}
    # Then each is kept when the stack is deleted or it is replaced, and deleted when the create that
    # made it rolls back, so a retry does not collide with a named queue (lanes-prod-<lane>) left behind
    assert set(kept.values()) == {("RetainExceptOnCreate", "Retain")}
    # And nothing in the template is retained unconditionally
    assert not [i for i, r in prod.template["Resources"].items() if r.get("DeletionPolicy") == "Retain"]


def test_with_the_edge_on_its_named_log_group_is_not_kept_after_a_failed_first_create(tmp_path):
    env = replace(ENVIRONMENTS["prod"], edge=EdgeConfig(enabled=True))
    app, _ = build_app(env, outdir=str(tmp_path))
    template = app.synth().get_stack_by_name(stack_name(env)).template
    (blocked,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Logs::LogGroup" and r["Properties"].get("LogGroupName", "").startswith("aws-waf-logs-")
    ]
    assert (blocked["DeletionPolicy"], blocked["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")


def test_dev_deletes_everything_with_the_stack(synth_env):
    dev = synth_env("dev")
    deleted = _policies(dev)
    assert {dev.resource(i)["Type"] for i in deleted} == {"AWS::SQS::Queue", *KEEPS_DATA}
    assert set(deleted.values()) == {("Delete", "Delete")}


def test_tables_are_on_demand_with_point_in_time_recovery(synthesized):
    tables = synthesized.resources("AWS::DynamoDB::Table")
    assert set(tables) == {"WebhookLogTable", "JobsTable", "StateTable", "DataTable", "AccountsTable"}
    for table in tables.values():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        # The window in which a deleted (expired or erased) item can still be restored
        assert props["PointInTimeRecoverySpecification"] == {
            "PointInTimeRecoveryEnabled": True,
            "RecoveryPeriodInDays": synthesized.env.retention.backup_days,
        }
        assert props["SSESpecification"]["SSEEnabled"] is True
        retained = synthesized.env.retain_stateful
        assert table["DeletionPolicy"] == ("RetainExceptOnCreate" if retained else "Delete")
        # Protection is set at the end of a deploy, not here (tests/infra/test_after_deploy.py)
        assert not props.get("DeletionProtectionEnabled", False)


def test_obligation_tables_find_pending_rows_by_age(synthesized):
    for logical_id, others in (("WebhookLogTable", set()), ("JobsTable", {schema.SENDER_INDEX})):
        props = synthesized.resource(logical_id)["Properties"]
        assert props["KeySchema"] == [{"AttributeName": schema.ID, "KeyType": "HASH"}]
        indexes = {index["IndexName"]: index for index in props["GlobalSecondaryIndexes"]}
        assert set(indexes) == {schema.PENDING_INDEX} | others
        index = indexes[schema.PENDING_INDEX]
        assert index["KeySchema"] == [
            {"AttributeName": schema.PENDING_SHARD, "KeyType": "HASH"},
            {"AttributeName": schema.PENDING_SINCE, "KeyType": "RANGE"},
        ]
        assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}


def test_every_table_expires_items_by_ttl(synthesized):
    # Each holds personal data (bodies, payloads, messages) or what points at it
    for logical_id in ("WebhookLogTable", "JobsTable", "StateTable", "DataTable", "AccountsTable"):
        props = synthesized.resource(logical_id)["Properties"]
        assert props["TimeToLiveSpecification"] == {"AttributeName": schema.TTL, "Enabled": True}
    assert [k["AttributeName"] for k in synthesized.resource("DataTable")["Properties"]["KeySchema"]] == [
        schema.PK,
        schema.SK,
    ]


def test_tables_holding_what_people_sent_find_it_by_sender_hash(synthesized):
    for logical_id in ("JobsTable", "DataTable"):
        props = synthesized.resource(logical_id)["Properties"]
        [index] = [i for i in props["GlobalSecondaryIndexes"] if i["IndexName"] == schema.SENDER_INDEX]
        assert index["KeySchema"] == [{"AttributeName": schema.SENDER_HASH, "KeyType": "HASH"}]
        assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    # The week of raw deliveries is scanned by an erasure: no index entry on every delivery
    webhook_indexes = synthesized.resource("WebhookLogTable")["Properties"]["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in webhook_indexes] == [schema.PENDING_INDEX]
    assert "GlobalSecondaryIndexes" not in synthesized.resource("StateTable")["Properties"]


def test_source_accounts_are_one_partition_sorted_by_account_without_indexes(synthesized):
    # Given the accounts table, which the sweeper reads whole with a Query of one partition
    props = synthesized.resource("AccountsTable")["Properties"]
    # Then it is keyed by partition and account, and no index costs the door's note a second write
    assert [k["AttributeName"] for k in props["KeySchema"]] == [schema.PK, schema.SK]
    assert "GlobalSecondaryIndexes" not in props


def test_the_sender_key_is_generated_and_kept_with_the_data(synthesized):
    secret = synthesized.resource("SenderKey")
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["GenerateStringKey"] == "sender_hash_key"
    assert generated["PasswordLength"] >= 32
    assert secret["DeletionPolicy"] == ("RetainExceptOnCreate" if synthesized.env.retain_stateful else "Delete")
    # No rotation: a new key would make every existing index entry unfindable
    assert not synthesized.resources("AWS::SecretsManager::RotationSchedule")


def test_every_lane_queue_has_a_redrive_dlq_and_a_long_enough_visibility(synthesized):
    env = synthesized.env
    for lane in env.lanes:
        queue = synthesized.resource(queue_logical_id(lane.name))["Properties"]
        dlq = synthesized.resource(dlq_logical_id(lane.name))["Properties"]
        assert queue["VisibilityTimeout"] == 6 * lane.policy.timeout_seconds + lane.batch_window_seconds
        assert queue["RedrivePolicy"] == {
            "deadLetterTargetArn": {"Fn::GetAtt": [dlq_logical_id(lane.name), "Arn"]},
            "maxReceiveCount": lane.policy.max_receives,
        }
        assert queue["SqsManagedSseEnabled"] is True
        assert queue["RedriveAllowPolicy"] == {"redrivePermission": "denyAll"}
        assert dlq["SqsManagedSseEnabled"] is True
        assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_each_dead_letter_queue_takes_dead_letters_from_its_own_lane_queue_only(synthesized):
    env = synthesized.env
    for lane in env.lanes:
        queue = synthesized.resource(queue_logical_id(lane.name))["Properties"]
        dlq = synthesized.resource(dlq_logical_id(lane.name))
        # The lane queue's fixed name, and the DLQ naming exactly that queue's ARN
        assert queue["QueueName"] == f"lanes-{env.name}-{lane.name}"
        policy = dlq["Properties"]["RedriveAllowPolicy"]
        assert policy["redrivePermission"] == "byQueue"
        (arn,) = policy["sourceQueueArns"]
        joined = json.dumps(arn)
        assert f":lanes-{env.name}-{lane.name}" in joined
        assert '"Ref": "AWS::AccountId"' in joined
        # Built from the name, not a reference: the queue already refers to its DLQ
        assert queue_logical_id(lane.name) not in json.dumps(dlq)


def test_every_queue_refuses_unencrypted_transport(synthesized):
    queue_ids = {queue_logical_id(lane.name) for lane in synthesized.env.lanes} | {
        dlq_logical_id(lane.name) for lane in synthesized.env.lanes
    }
    guarded = set()
    for policy in synthesized.resources("AWS::SQS::QueuePolicy").values():
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        if any(
            s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
            for s in statements
        ):
            guarded |= {q["Ref"] for q in policy["Properties"]["Queues"]}
    assert queue_ids <= guarded


def test_meta_secret_is_generated_and_never_in_function_environments(synthesized):
    Template.from_json(synthesized.template).has_resource_properties(
        "AWS::SecretsManager::Secret",
        {
            "GenerateSecretString": Match.object_like(
                {
                    "GenerateStringKey": "verify_token",
                    "SecretStringTemplate": json.dumps({"app_secret": "", "previous_app_secret": ""}),
                }
            )
        },
    )
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        text = json.dumps(variables)
        assert "app_secret" not in text
        assert "verify_token" not in text
        if "META_SECRET_ARN" in variables:
            assert variables["META_SECRET_ARN"] == {"Ref": "MetaSecret"}


def test_the_data_table_is_infrequent_access_where_its_items_are_kept_long_enough_to_pay(synthesized):
    env = synthesized.env
    classes = {
        logical_id: synthesized.resource(logical_id)["Properties"].get("TableClass", "STANDARD")
        for logical_id in ("WebhookLogTable", "JobsTable", "StateTable", "DataTable")
    }
    expected = "STANDARD_INFREQUENT_ACCESS" if env.retention.effects_days >= 45 else "STANDARD"
    assert classes == {
        "WebhookLogTable": "STANDARD",
        "JobsTable": "STANDARD",
        "StateTable": "STANDARD",
        "DataTable": expected,
    }
    if env.name == "prod":  # a quarter's effects: the case the class exists for
        assert expected == "STANDARD_INFREQUENT_ACCESS"


def test_the_data_table_indexes_only_who_an_item_is_about(synthesized):
    # Given the synthesized data table
    props = synthesized.resource("DataTable")["Properties"]

    # Then its one index is the erasure's: no entry written on every stored message for `lanectl
    # trace` by Meta's id, which scans the log instead (ops/commands/meta_id_search.py)
    assert [index["IndexName"] for index in props["GlobalSecondaryIndexes"]] == [schema.SENDER_INDEX]
