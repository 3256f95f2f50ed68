"""Meta's secrets: read once, checked for use, retried after a pause when unusable."""

from __future__ import annotations

import json

import boto3
import pytest

from pipeline.adapters.secrets import MetaSecrets, MetaSecretSource, SecretsMisconfigured
from tests.support.aws import META_APP_SECRET, META_PREVIOUS_APP_SECRET, META_VERIFY_TOKEN, REGION, AwsCalls
from tests.unit.ingress.conftest import Clock


def test_the_secret_is_parsed_and_both_signing_keys_are_offered(deployed):
    client = boto3.client("secretsmanager", region_name=REGION)
    source = MetaSecretSource(client, deployed.resources.secret_arn, Clock())

    secrets = source.get()

    assert secrets.verify_token == META_VERIFY_TOKEN
    assert secrets.signing_keys() == (META_APP_SECRET.encode(), META_PREVIOUS_APP_SECRET.encode())


def test_a_successful_read_is_kept(deployed):
    client = boto3.client("secretsmanager", region_name=REGION)
    calls = AwsCalls().watch(client)
    source = MetaSecretSource(client, deployed.resources.secret_arn, Clock())

    for _ in range(5):
        source.get()

    assert calls.calls == ["secretsmanager.GetSecretValue"]


def test_a_misconfigured_secret_is_read_again_after_the_pause(deployed):
    client = boto3.client("secretsmanager", region_name=REGION)
    arn = client.create_secret(Name="m2", SecretString=json.dumps({"app_secret": ""}))["ARN"]
    clock = Clock()
    source = MetaSecretSource(client, arn, clock, retry_seconds=5)
    with pytest.raises(SecretsMisconfigured):
        source.get()

    # Fixed by an operator: not seen within the pause, seen after it
    client.put_secret_value(SecretId=arn, SecretString=json.dumps({"app_secret": "now-set"}))
    with pytest.raises(SecretsMisconfigured):
        source.get()
    clock.advance(5)
    assert source.get().signing_keys() == (b"now-set",)


@pytest.mark.parametrize(
    "text",
    ["[]", "not json", json.dumps({"app_secret": 5}), json.dumps({"verify_token": "t"})],
    ids=["array", "not-json", "not-a-string", "no-app-secret"],
)
def test_unusable_secrets_are_misconfiguration(text):
    with pytest.raises(SecretsMisconfigured):
        MetaSecrets.from_json(text)


def test_an_empty_previous_secret_is_not_a_signing_key():
    secrets = MetaSecrets.from_json(json.dumps({"app_secret": "a", "previous_app_secret": "", "verify_token": "t"}))

    assert secrets.signing_keys() == (b"a",)
