"""The optional edge: off in every shipped environment; on, CloudFront with a WAF web ACL that
limits each source address and serves only the webhook, passing cfn-lint and cdk-nag."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint

from stacks.app_builder import build_app
from stacks.config.environments import EDGE_REGION, ENVIRONMENTS, EdgeConfig
from stacks.runtime_env import stack_name

pytestmark = pytest.mark.xdist_group("synth")

EDGE = EdgeConfig(enabled=True, requests_per_ip=1200, window_seconds=120)


@pytest.fixture(scope="module")
def edged(tmp_path_factory):
    """prod with the edge on, synthesized with cdk-nag enforcing (an unacknowledged finding fails it)."""
    env = replace(ENVIRONMENTS["prod"], edge=EDGE)
    outdir = tmp_path_factory.mktemp("edge")
    app, _ = build_app(env, outdir=str(outdir))
    template = app.synth().get_stack_by_name(stack_name(env)).template
    return env, template, outdir


def _of_type(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_the_edge_is_off_in_every_shipped_environment(synthesized):
    assert synthesized.env.edge.enabled is False
    kinds = {r["Type"] for r in synthesized.template["Resources"].values()}
    assert not {k for k in kinds if k.startswith(("AWS::CloudFront::", "AWS::WAFv2::"))}
    assert "EdgeUrl" not in synthesized.template["Outputs"]


def test_with_the_edge_on_cdk_nag_passes_with_a_reason_for_each_acknowledgement(edged):
    _, template, outdir = edged
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    (distribution,) = _of_type(template, "AWS::CloudFront::Distribution").values()
    acknowledged = distribution["Metadata"]["cdk_nag"]["rules_to_suppress"]
    assert {rule["id"] for rule in acknowledged} == {"AwsSolutions-CFR1", "AwsSolutions-CFR3", "AwsSolutions-CFR4"}
    assert all(len(rule["reason"]) > 40 for rule in acknowledged)


def test_with_the_edge_on_cfn_lint_finds_no_errors_in_the_only_region_it_deploys_to(edged):
    # The template's own rule refuses every other region (asserted below), so lint it there
    _, template, _ = edged
    errors = [m for m in lint(json.dumps(template), config=ManualArgs(regions=[EDGE_REGION])) if m.rule.id[0] == "E"]
    assert errors == [], "\n".join(f"{m.rule.id} {m.message} ({m.path})" for m in errors)


def test_an_unpinned_stack_with_the_edge_refuses_to_deploy_outside_us_east_1(edged):
    _, template, _ = edged
    assertions = [a for rule in template["Rules"].values() for a in rule["Assertions"]]
    assert {"Fn::Equals": [{"Ref": "AWS::Region"}, EDGE_REGION]} in [a["Assert"] for a in assertions]


def test_an_environment_pinned_elsewhere_cannot_have_the_edge():
    with pytest.raises(ValueError, match="the edge needs the stack in us-east-1"):
        replace(ENVIRONMENTS["prod"], region="eu-west-1", edge=EDGE)


def test_the_web_acl_limits_each_source_address_and_serves_only_the_webhook(edged):
    _, template, _ = edged
    (acl_id, acl), *_ = _of_type(template, "AWS::WAFv2::WebACL").items()
    props = acl["Properties"]
    assert (props["Scope"], props["DefaultAction"]) == ("CLOUDFRONT", {"Allow": {}})
    rules = {r["Name"]: r for r in props["Rules"]}
    rate = rules["per-source-address"]
    assert rate["Action"] == {"Block": {}}
    assert rate["Statement"]["RateBasedStatement"] == {
        "AggregateKeyType": "IP",
        "Limit": EDGE.requests_per_ip,
        "EvaluationWindowSec": EDGE.window_seconds,
    }
    path = rules["webhook-path-only"]
    assert path["Action"] == {"Block": {}}
    match = path["Statement"]["NotStatement"]["Statement"]["ByteMatchStatement"]
    assert (match["SearchString"], match["PositionalConstraint"], match["FieldToMatch"]) == (
        "/webhooks/meta",
        "EXACTLY",
        {"UriPath": {}},
    )
    # And CloudFront uses it, forwards to the API uncached, HTTPS only
    (distribution,) = _of_type(template, "AWS::CloudFront::Distribution").values()
    config = distribution["Properties"]["DistributionConfig"]
    assert config["WebACLId"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    (origin,) = config["Origins"]
    assert ".execute-api." in json.dumps(origin["DomainName"])
    assert origin["CustomOriginConfig"] == {"OriginProtocolPolicy": "https-only", "OriginSSLProtocols": ["TLSv1.2"]}
    behaviour = config["DefaultCacheBehavior"]
    assert behaviour["ViewerProtocolPolicy"] == "https-only"
    assert behaviour["CachePolicyId"] == "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"  # CachingDisabled
    assert "POST" in behaviour["AllowedMethods"]
    assert "EdgeUrl" in template["Outputs"]


def test_blocked_requests_are_logged_without_the_query_string(edged):
    _, template, _ = edged
    (logging,) = _of_type(template, "AWS::WAFv2::LoggingConfiguration").values()
    props = logging["Properties"]
    # The handshake carries the verify token in its query string
    assert props["RedactedFields"] == [{"QueryString": {}}]
    assert props["LoggingFilter"]["DefaultBehavior"] == "DROP"
    assert props["LoggingFilter"]["Filters"][0]["Conditions"] == [{"ActionCondition": {"Action": "BLOCK"}}]
    (group,) = [
        g for g in _of_type(template, "AWS::Logs::LogGroup").values() if "LogGroupName" in g.get("Properties", {})
    ]
    assert group["Properties"]["LogGroupName"] == "aws-waf-logs-lanes-prod-edge"
