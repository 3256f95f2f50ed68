"""What each function may do: to each table, and to the tables' indexes, in every environment."""

from __future__ import annotations

import json

import pytest

from pipeline.domain.erasure import requests as erasure_rules
from pipeline.domain.webhook.routing import WEBHOOK_LANES

pytestmark = pytest.mark.xdist_group("synth")


def test_no_function_may_touch_an_index_it_does_not_query(synthesized):
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for resource in resources:
                assert "index/*" not in json.dumps(resource)
                if "/index/" in json.dumps(resource):
                    assert statement["Action"] == "dynamodb:Query"


def _table_actions(synthesized, handler: str, lanes: set[str] | None = None) -> dict[str, set[str]]:
    """DynamoDB actions granted to the functions with `handler` (consumers: of `lanes` only, if
    given), by table logical ID."""
    roles = {
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == handler
        and (lanes is None or json.loads(f["Properties"]["Environment"]["Variables"]["LANE"])["name"] in lanes)
    }
    granted: dict[str, set[str]] = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if not {r["Ref"] for r in policy["Properties"]["Roles"]} & roles:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for resource in resources:
                if isinstance(resource, dict) and "Fn::GetAtt" in resource and resource["Fn::GetAtt"][1] == "Arn":
                    table = resource["Fn::GetAtt"][0]
                    if table.endswith("Table"):
                        granted.setdefault(table, set()).update(a for a in actions if a.startswith("dynamodb:"))
    return granted


def test_each_function_may_do_only_what_its_code_does_to_each_table(synthesized):
    watched = synthesized.env.accounts is not None
    assert _table_actions(synthesized, "pipeline.handlers.ingress.handler") == {
        # The row, and `mark_unsent` when its send fails (the sweeper then finds it).
        "WebhookLogTable": {"dynamodb:PutItem", "dynamodb:UpdateItem"},
        # Where source accounts are watched: their last-seen items, stamped at most once an interval
        **({"AccountsTable": {"dynamodb:UpdateItem"}} if watched else {}),
    }
    jobs = _table_actions(synthesized, "pipeline.handlers.jobs.handler")
    assert jobs == {
        # The row, and `mark_unsent` when its send fails, as the door's
        "JobsTable": {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"},
        "StateTable": {"dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
    }
    others = {lane.name for lane in synthesized.env.lanes} - {erasure_rules.LANE}
    for lane in others:
        consumer = _table_actions(synthesized, "pipeline.handlers.consumer.handler", {lane})
        assert "dynamodb:PutItem" not in consumer.get("WebhookLogTable", set()) | consumer["JobsTable"]
        assert not any("dynamodb:BatchWriteItem" in actions for actions in consumer.values())
        # Only the lanes the door routes to read the webhook log
        assert ("WebhookLogTable" in consumer) == (lane in WEBHOOK_LANES)
    # Only the erasure lane's consumer scans the raw deliveries (they have no sender index), reads
    # the person's partition of the data table, puts tombstones over rows and deletes in batches
    eraser = _table_actions(synthesized, "pipeline.handlers.consumer.handler", {erasure_rules.LANE})
    assert {"dynamodb:Scan", "dynamodb:PutItem", "dynamodb:BatchWriteItem"} <= eraser["WebhookLogTable"]
    assert "dynamodb:PutItem" in eraser["JobsTable"]
    assert {"dynamodb:Query", "dynamodb:BatchWriteItem"} <= eraser["DataTable"]
    assert "dynamodb:BatchWriteItem" in eraser["StateTable"]
    erasure_door = _table_actions(synthesized, "pipeline.handlers.erasure.handler")
    assert erasure_door == {
        "JobsTable": {"dynamodb:PutItem", "dynamodb:GetItem"},
        # the queued count; the person's open erasure (a repeat answers its code); identity links
        "StateTable": {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
    }
    sweeper = _table_actions(synthesized, "pipeline.handlers.sweeper.handler")
    # Lane history (drain counts, depth sightings) read, and written with job counts.
    assert sweeper["StateTable"] == {"dynamodb:BatchGetItem", "dynamodb:UpdateItem"}
    # Where source accounts are watched, their last-seen items are read with one Query a page
    assert sweeper.get("AccountsTable") == ({"dynamodb:Query"} if watched else None)
    assert "DataTable" not in sweeper
    for grants in (jobs, eraser, erasure_door, sweeper):
        assert not any("dynamodb:DeleteItem" in actions for actions in grants.values())
    assert not any(
        "dynamodb:Scan" in actions for actions in (*jobs.values(), *erasure_door.values(), *sweeper.values())
    )


def test_no_function_may_look_up_a_queue_or_describe_a_secret(synthesized):
    # Queue URLs and secret ARNs come from the function's environment: nothing asks AWS for them.
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert "sqs:GetQueueUrl" not in actions
            assert "secretsmanager:DescribeSecret" not in actions


def _bedrock_grants(synthesized) -> dict[str, list[tuple[list[str], list]]]:
    """Bedrock statements by the LANE of the consumer whose role has them ('' for other functions)."""
    lane_of_role = {}
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        lane = json.loads(variables["LANE"])["name"] if "LANE" in variables else ""
        if function["Properties"]["Handler"] == "pipeline.handlers.lane_probe.handler":
            lane = "lane-probe"
        lane_of_role[function["Properties"]["Role"]["Fn::GetAtt"][0]] = lane
    found: dict[str, list[tuple[list[str], list]]] = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if not any(a.startswith("bedrock:") for a in actions):
                continue
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for role in policy["Properties"]["Roles"]:
                found.setdefault(lane_of_role.get(role["Ref"], role["Ref"]), []).append((actions, resources))
    return found


def test_only_the_model_lanes_may_invoke_a_model_and_only_their_own(synthesized):
    env = synthesized.env
    grants = _bedrock_grants(synthesized)
    # Exactly the lanes with a model in the environment's config have a Bedrock grant, and the lane
    # probe, for its one-token call on each of them (pinned in its own test below)
    assert set(grants) == {model.lane for model in env.models} | {"lane-probe"}
    for model in env.models:
        [(actions, resources)] = grants[model.lane]
        # Converse is authorised as InvokeModel: nothing else of Bedrock, on that model alone
        assert actions == ["bedrock:InvokeModel"]
        text = json.dumps(resources)
        assert f"foundation-model/{model.foundation_model}" in text
        assert "*" not in text.replace("bedrock:*::", "")
        others = [m for m in env.models if m.settings.model_id != model.settings.model_id]
        assert not any(other.settings.model_id in text for other in others)


def test_only_the_lanes_that_send_replies_read_the_access_token_and_the_data_table(synthesized):
    from stacks.runtime_env import SENDING_TASKS, auto_replies

    lane_of_role = {}
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        lane_of_role[function["Properties"]["Role"]["Fn::GetAtt"][0]] = (
            json.loads(variables["LANE"]) if "LANE" in variables else None
        )
    readers = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "MetaAccessToken" in json.dumps(statement["Resource"]):
                assert statement["Action"] == "secretsmanager:GetSecretValue"
                readers.update(policy["Properties"]["Roles"][0]["Ref"] for _ in [0])
    sending = {role for role, lane in lane_of_role.items() if lane and lane["task"] in SENDING_TASKS}
    # and the lane probe, which checks the token with `GET /me` after a 190 paused the lane
    (probe,) = [
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "pipeline.handlers.lane_probe.handler"
    ]
    assert readers == sending | {probe}
    assert sending != set()
    # The reply a send reads is in the data table: only the sending lanes read it there, and a
    # messages lane that auto-replies (whether a message was stamped already, tasks/auto_reply.py)
    for lane in synthesized.env.lanes:
        consumer = _table_actions(synthesized, "pipeline.handlers.consumer.handler", {lane.name})
        reads_data = "dynamodb:GetItem" in consumer.get("DataTable", set())
        expected = lane.policy.task in SENDING_TASKS or auto_replies(synthesized.env, lane)
        assert reads_data == expected, lane.name


def test_only_the_lanes_that_sign_or_verify_reply_references_read_the_callback_key(synthesized):
    from stacks.runtime_env import SIGNING_TASKS

    lane_of_role = {}
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        role = function["Properties"]["Role"]["Fn::GetAtt"][0]
        lane_of_role[role] = json.loads(variables["LANE"]) if "LANE" in variables else None
        # The variable naming it goes exactly where the grant does
        assert ("REPLY_CALLBACK_KEY_ARN" in variables) == bool(
            lane_of_role[role] and lane_of_role[role]["task"] in SIGNING_TASKS
        )
    readers = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "ReplyCallbackKey" in json.dumps(statement["Resource"]):
                assert statement["Action"] == "secretsmanager:GetSecretValue"
                readers.add(policy["Properties"]["Roles"][0]["Ref"])
    signing = {role for role, lane in lane_of_role.items() if lane and lane["task"] in SIGNING_TASKS}
    assert readers == signing
    assert {lane["task"] for role, lane in lane_of_role.items() if role in readers} == {"ai", "messages"}
    [key] = [r for r in synthesized.resources("AWS::SecretsManager::Secret") if r == "ReplyCallbackKey"]
    generated = synthesized.resources("AWS::SecretsManager::Secret")[key]["Properties"]["GenerateSecretString"]
    assert (generated["GenerateStringKey"], generated["PasswordLength"]) == ("callback_key", 64)


def _probe_statements(synthesized) -> list[tuple[list[str], list]]:
    (role,) = [
        f["Properties"]["Role"]["Fn::GetAtt"][0]
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "pipeline.handlers.lane_probe.handler"
    ]
    found = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if role not in {r["Ref"] for r in policy["Properties"]["Roles"]}:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            found.append((actions, resources))
    return found


def test_the_lane_probe_may_touch_exactly_the_pausable_lanes_mappings_the_token_and_their_models(synthesized):
    from stacks.runtime_env import probed_lanes

    env = synthesized.env
    statements = _probe_statements(synthesized)
    by_action: dict[str, list] = {}
    for actions, resources in statements:
        for action in actions:
            by_action.setdefault(action, []).extend(resources)
    # The pause marks: read them all at once, delete one when its ramp ends; nothing else of a table
    assert _table_actions(synthesized, "pipeline.handlers.lane_probe.handler") == {
        "StateTable": {"dynamodb:BatchGetItem", "dynamodb:DeleteItem"}
    }
    # Exactly the mappings of the lanes that can pause themselves, read and updated, nothing listed
    mappings = {
        logical_id
        for logical_id in synthesized.resources("AWS::Lambda::EventSourceMapping")
        if any(logical_id.startswith(f"{lane_id}Lane") for lane_id in _lane_ids(probed_lanes(env)))
    }
    for action in ("lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"):
        named = {part["Ref"] for r in by_action[action] for part in r["Fn::Join"][1] if isinstance(part, dict)}
        assert named - {"AWS::Partition", "AWS::Region", "AWS::AccountId"} == mappings, action
    assert {a for a in by_action if a.startswith("lambda:")} == {
        "lambda:GetEventSourceMapping",
        "lambda:UpdateEventSourceMapping",
    }
    # Meta's access token, read only
    assert by_action["secretsmanager:GetSecretValue"] == [{"Ref": "MetaAccessToken"}]
    # Converse on the watched lanes' models, each named; nothing else of Bedrock
    assert {a for a in by_action if a.startswith("bedrock:")} == {"bedrock:InvokeModel"}
    text = json.dumps(by_action["bedrock:InvokeModel"])
    for lane in probed_lanes(env):
        model = env.model(lane.name)
        if model is not None:
            assert f"foundation-model/{model.foundation_model}" in text
    assert "*" not in text.replace("bedrock:*::", "")


def _lane_ids(lanes) -> set[str]:
    from stacks.runtime_env import lane_id

    return {lane_id(lane.name) for lane in lanes}
