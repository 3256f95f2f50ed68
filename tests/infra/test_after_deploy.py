"""The resource that runs last in a deploy (stacks/constructs/after_deploy.py): the tables carry no
deletion protection in the template, so a failed first create rolls back cleanly, and this
resource, after every other, turns protection on and stops again the mappings of paused lanes."""

from __future__ import annotations

import json

import pytest

from stacks.constructs.after_deploy import RESOURCE_TYPE, template_digest

pytestmark = pytest.mark.xdist_group("synth")


def _after_deploy(synthesized) -> tuple[str, dict]:
    ((logical_id, resource),) = synthesized.resources(RESOURCE_TYPE).items()
    return logical_id, resource


def test_no_table_is_protected_by_the_template_so_a_failed_first_create_can_delete_it(synthesized):
    for logical_id, table in synthesized.resources("AWS::DynamoDB::Table").items():
        # A protected table refuses the delete of its create's rollback: ROLLBACK_FAILED
        assert not table["Properties"].get("DeletionProtectionEnabled", False), logical_id


def test_the_tables_are_protected_at_the_end_of_a_deploy_where_the_environment_keeps_its_data(synthesized):
    _, resource = _after_deploy(synthesized)
    tables = sorted(synthesized.resources("AWS::DynamoDB::Table"))
    expected = tables if synthesized.env.retain_stateful else []
    assert sorted(ref["Ref"] for ref in resource["Properties"]["Tables"]) == expected


def test_it_runs_after_every_other_resource_of_the_stack(synthesized):
    # Given the resource and its own function (which it must be able to call)
    logical_id, resource = _after_deploy(synthesized)
    own = json.dumps(resource["Properties"]["ServiceToken"])
    function_id = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    function = synthesized.resource(function_id)
    own_ids = {function_id} | {i for i in synthesized.template["Resources"] if i in json.dumps(function) or i in own}
    # Then it depends on every other resource: created and updated after each, so nothing is
    # created after the tables are protected, and no mapping is updated after its pause is kept
    others = set(synthesized.template["Resources"]) - {logical_id} - own_ids
    assert others <= set(resource["DependsOn"])
    # And CloudFormation does not wait an hour for a function that never answers
    assert int(resource["Properties"]["ServiceTimeout"]) <= 300


def test_it_keeps_every_lanes_pause_and_runs_whenever_a_mapping_or_table_may_change(synthesized):
    _, resource = _after_deploy(synthesized)
    properties = resource["Properties"]
    mappings = synthesized.resources("AWS::Lambda::EventSourceMapping")
    assert sorted(ref["Ref"] for ref in properties["Mappings"].values()) == sorted(mappings)
    assert sorted(properties["Mappings"]) == sorted(lane.name for lane in synthesized.env.lanes)
    assert properties["StateTable"] == {"Ref": "StateTable"}
    # The digest changes with the lanes' and tables' config, so a deploy that changes them runs it
    assert properties["Digest"] == template_digest(synthesized.env)


def test_its_function_may_protect_only_the_tables_and_stop_only_the_lanes_mappings(synthesized):
    _, resource = _after_deploy(synthesized)
    function = synthesized.resource(resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0])
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in synthesized.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    by_action = {}
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            by_action[action] = json.dumps(statement["Resource"])
    assert "dynamodb:DeleteTable" not in by_action
    assert ("dynamodb:UpdateTable" in by_action) is synthesized.env.retain_stateful
    assert "event-source-mapping" in by_action["lambda:UpdateEventSourceMapping"]
    assert "*" not in json.loads(by_action["lambda:UpdateEventSourceMapping"])
