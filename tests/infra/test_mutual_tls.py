"""Optional mutual TLS on the webhook: off in every shipped environment; on, a regional custom
domain with the truststore mapped to the API, the door told whose certificate to require, and the
template passing cdk-nag and cfn-lint. Bad configuration fails at synth with what is wrong."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cfnlint.api import ManualArgs, lint

from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS, EdgeConfig
from stacks.config.mutual_tls import META_CLIENT_SUBJECT, MutualTlsConfig
from stacks.runtime_env import stack_name

pytestmark = pytest.mark.xdist_group("synth")

CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
MTLS = MutualTlsConfig(
    domain_name="hooks.example.com",
    certificate_arn=CERTIFICATE,
    truststore_uri="s3://example-truststores/meta/truststore.pem",
    truststore_version="3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
)


def _synth(env, outdir):
    app, _ = build_app(env, outdir=str(outdir))
    return app.synth().get_stack_by_name(stack_name(env)).template


@pytest.fixture(scope="module")
def with_mtls(tmp_path_factory):
    """prod with mutual TLS on, synthesized with cdk-nag enforcing (an unacknowledged finding fails it)."""
    env = replace(ENVIRONMENTS["prod"], mutual_tls=MTLS)
    outdir = tmp_path_factory.mktemp("mtls")
    return env, _synth(env, outdir), outdir


def _of_type(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _door_settings(template: dict) -> dict:
    (door,) = [
        r
        for r in _of_type(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "pipeline.handlers.ingress.handler"
    ]
    return json.loads(door["Properties"]["Environment"]["Variables"]["WEBHOOK_SETTINGS"])


def test_mutual_tls_is_off_in_every_shipped_environment(synthesized):
    assert synthesized.env.mutual_tls is None
    assert not _of_type(synthesized.template, "AWS::ApiGatewayV2::DomainName")
    assert _door_settings(synthesized.template)["client_subject"] is None


def test_on_a_regional_domain_requires_a_client_certificate_from_the_truststore(with_mtls):
    _, template, _ = with_mtls
    ((domain_id, domain),) = _of_type(template, "AWS::ApiGatewayV2::DomainName").items()
    props = domain["Properties"]
    assert props["DomainName"] == "hooks.example.com"
    (configuration,) = props["DomainNameConfigurations"]
    assert configuration["CertificateArn"] == CERTIFICATE
    assert configuration["EndpointType"] == "REGIONAL"
    assert configuration["SecurityPolicy"] == "TLS_1_2"
    assert props["MutualTlsAuthentication"] == {
        "TruststoreUri": "s3://example-truststores/meta/truststore.pem",
        "TruststoreVersion": MTLS.truststore_version,
    }
    # The API's stage is mapped to it, and the outputs say where DNS and Meta must point
    ((_, mapping),) = _of_type(template, "AWS::ApiGatewayV2::ApiMapping").items()
    (api_id,) = _of_type(template, "AWS::ApiGatewayV2::Api")
    assert mapping["Properties"]["ApiId"] == {"Ref": api_id}
    assert mapping["Properties"]["DomainName"] == {"Ref": domain_id}
    assert template["Outputs"]["WebhookMutualTlsUrl"]["Value"] == "https://hooks.example.com/webhooks/meta"
    assert template["Outputs"]["WebhookDomainTarget"]["Value"] == {"Fn::GetAtt": [domain_id, "RegionalDomainName"]}


def test_on_the_door_requires_metas_certificate(with_mtls):
    _, template, _ = with_mtls
    assert _door_settings(template)["client_subject"] == META_CLIENT_SUBJECT == "client.webhooks.fbclientcerts.com"


def test_on_cdk_nag_and_cfn_lint_pass(with_mtls):
    _, template, outdir = with_mtls
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    errors = [m for m in lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])) if m.rule.id[0] == "E"]
    assert errors == [], "\n".join(f"{m.rule.id} {m.message} ({m.path})" for m in errors)


def test_an_unpinned_stack_refuses_to_deploy_outside_the_certificates_region(with_mtls):
    env, template, _ = with_mtls
    assert env.region is None
    assertions = [a["Assert"] for rule in template["Rules"].values() for a in rule["Assertions"]]
    assert {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]} in assertions


def test_a_pinned_stack_in_another_region_than_the_certificate_is_refused():
    with pytest.raises(ValueError, match="certificate is in us-east-1, but a regional custom domain needs it in"):
        replace(ENVIRONMENTS["prod"], region="eu-west-1", mutual_tls=MTLS)


def test_mutual_tls_and_the_edge_exclude_each_other():
    with pytest.raises(ValueError, match="CloudFront ends Meta's TLS connection"):
        replace(ENVIRONMENTS["prod"], mutual_tls=MTLS, edge=EdgeConfig(enabled=True))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"domain_name": "Hooks.Example.com"}, "is not a lower-case host name"),
        ({"domain_name": "localhost"}, "is not a lower-case host name"),
        ({"certificate_arn": "arn:aws:iam::123456789012:server-certificate/x"}, "is not an ACM certificate ARN"),
        ({"truststore_uri": "https://example.com/truststore.pem"}, r"is not s3://<bucket>/<key>"),
        ({"truststore_uri": "s3://bucket-only"}, r"is not s3://<bucket>/<key>"),
        ({"truststore_version": " "}, "truststore_version is empty"),
        ({"client_subject": "CN=a,O=b"}, "is not a common name"),
        ({"client_subject": ""}, "is not a common name"),
    ],
)
def test_a_bad_mutual_tls_setting_fails_with_what_is_wrong(change, error):
    with pytest.raises(ValueError, match=error):
        replace(MTLS, **change)
