"""cdk-nag (AwsSolutions and Serverless) and cfn-lint on the real templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import aws_sqs as sqs
from cfnlint.api import lint_all

from stacks.app_builder import build_app
from stacks.config.doors import NO_FUNCTION_URLS
from stacks.config.environments import ENVIRONMENTS

pytestmark = pytest.mark.xdist_group("synth")


def test_nag_packs_pass_and_every_acknowledgement_names_its_reason(synthesized):
    # Synthesis itself fails on an unacknowledged finding; reaching here means none are left.
    report = json.loads((Path(synthesized.outdir) / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    acknowledged = [
        rule
        for resource in synthesized.template["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]
    assert acknowledged
    for rule in acknowledged:
        assert len(rule["reason"]) > 40, rule
    rules = {rule["id"] for rule in acknowledged}
    assert rules <= {
        "AwsSolutions-IAM5[Resource::*]",
        "AwsSolutions-APIG4",
        "AwsSolutions-SMG4",
        "AwsSolutions-SQS3",
        "Serverless-LambdaDLQ",
        "Serverless-LambdaEventSourceMappingDestination",
        "Serverless-SQSRedrivePolicy",
        "Serverless-EventBusDLQ",
        "Serverless-LambdaTracing",
    }
    # Tracing is acknowledged as passed through only where the environment turns it off.
    assert ("Serverless-LambdaTracing" in rules) == (not synthesized.env.tracing_active)


def test_an_unacknowledged_finding_fails_the_synth(tmp_path):
    # Given the dev app with one queue that breaks AwsSolutions-SQS3/SQS4 (no DLQ, no SSL policy)
    app, stack = build_app(ENVIRONMENTS["dev"], outdir=str(tmp_path))
    sqs.Queue(stack, "Careless")
    # When it is synthesized, Then the nag packs stop it
    with pytest.raises(RuntimeError, match="ValidationFailed") as failure:
        app.synth()
    assert "lanes-dev/Careless/Resource" in str(failure.value)
    assert "AwsSolutions-SQS3" in str(failure.value)


def _refused_where_absent(synthesized, match) -> bool:
    """A function URL linted for a region that has none, where the template's rule refuses that
    region (stacks/constructs/ingress.py): the deploy stops there before creating anything."""
    if match.rule.id != "E3006" or "'AWS::Lambda::Url'" not in match.message:
        return False
    region = match.message.split("does not exist in '")[1].rstrip("'")
    rules = synthesized.template.get("Rules", {})
    return region in NO_FUNCTION_URLS and any("FunctionUrlsHere" in name for name in rules)


def test_cfn_lint_finds_no_errors(synthesized):
    matches = lint_all(json.dumps(synthesized.template))
    errors = [m for m in matches if m.rule.id.startswith("E") and not _refused_where_absent(synthesized, m)]
    assert errors == [], "\n".join(f"{m.rule.id} {m.message} ({m.path})" for m in errors)
