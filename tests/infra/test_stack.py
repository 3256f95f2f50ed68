"""The stack as a whole: the outputs the operator CLI reads, and which environments refuse deletion."""

from __future__ import annotations

import pytest

from stacks.runtime_env import lane_id

pytestmark = pytest.mark.xdist_group("synth")


def test_outputs_name_every_lane_resource_for_the_operator_cli(synthesized):
    outputs = synthesized.template["Outputs"]
    for lane in synthesized.env.lanes:
        prefix = lane_id(lane.name)
        for suffix in ("QueueUrl", "QueueArn", "DlqUrl", "DlqArn", "MappingId", "FunctionName"):
            assert f"{prefix}{suffix}" in outputs
    for key in (
        "ApiUrl",
        "WebhookUrl",
        "WebhookFunctionName",
        "WebhookTableName",
        "JobsTableName",
        "StateTableName",
        "DataTableName",
        "AccountsTableName",
        "MetaSecretArn",
        "SenderKeyArn",
    ):
        assert key in outputs


def test_prod_is_protected_from_deletion(synth_env):
    prod = synth_env("prod")
    assert prod.stack.termination_protection is True
    assert synth_env("dev").stack.termination_protection is False
