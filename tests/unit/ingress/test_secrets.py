"""Meta's secrets: cached for a while, read early at most once per interval, a previous secret that
stops at its date, and unusable secrets refused with the field to fix."""

from __future__ import annotations

import json

import boto3
import pytest

from pipeline.adapters.secrets import MetaSecrets, MetaSecretSource, SecretsMisconfigured, SecretsUnavailable
from pipeline.domain.meta_secret import MAX_PREVIOUS_SECONDS
from tests.support.aws import (
    META_APP_SECRET,
    META_PREVIOUS_APP_SECRET,
    META_VERIFY_TOKEN,
    REGION,
    AwsCalls,
)
from tests.unit.ingress.conftest import NOW, Clock

READ = "secretsmanager.GetSecretValue"


def _client():
    return boto3.client("secretsmanager", region_name=REGION)


def _secret(app: str = "new", previous: str = "", expires: object = None) -> str:
    value: dict[str, object] = {"app_secret": app, "verify_token": "t", "previous_app_secret": previous}
    if expires is not None:
        value["previous_expires_at"] = expires
    return json.dumps(value)


def test_the_secret_is_parsed_and_both_signing_keys_are_offered_while_the_previous_is_in_force(deployed):
    source = MetaSecretSource(_client(), deployed.resources.secret_arn, Clock())

    secrets = source.get()

    assert secrets.verify_token == META_VERIFY_TOKEN
    assert secrets.signing_keys(NOW) == (META_APP_SECRET.encode(), META_PREVIOUS_APP_SECRET.encode())


def test_the_previous_secret_signs_nothing_from_its_expiry_on():
    secrets = MetaSecrets.from_json(_secret("current", "old", "2027-01-15T09:00:00Z"), NOW)
    expires = secrets.previous_expires_at
    assert expires is not None

    assert secrets.signing_keys(expires - 0.001) == (b"current", b"old")
    assert secrets.signing_keys(expires) == (b"current",)


@pytest.mark.parametrize(
    ("expires", "epoch"),
    [(NOW + 60, NOW + 60), ("2027-01-15T09:00:00Z", 1_800_003_600.0), ("2027-01-15T10:00:00+01:00", 1_800_003_600.0)],
    ids=["epoch-seconds", "utc", "with-offset"],
)
def test_the_expiry_is_epoch_seconds_or_an_iso_time_with_its_offset(expires, epoch):
    assert MetaSecrets.from_json(_secret("a", "b", expires), NOW).previous_expires_at == epoch


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[]", "JSON object"),
        ("not json", "not JSON"),
        (json.dumps({"app_secret": 5}), "strings"),
        (json.dumps({"verify_token": "t"}), "no app_secret"),
        (_secret("a", "b"), "previous_expires_at"),
        (_secret("a", "b", "2027-01-15T09:00:00"), "no offset"),
        (_secret("a", "b", "next tuesday"), "ISO 8601"),
        (_secret("a", "b", True), "previous_expires_at"),
        (_secret("a", "b", NOW + MAX_PREVIOUS_SECONDS + 1), "switch-over"),
    ],
    ids=["array", "not-json", "not-a-string", "no-app-secret", "undated", "naive", "prose", "bool", "too-far"],
)
def test_unusable_secrets_are_misconfiguration_naming_what_to_fix(text, names):
    with pytest.raises(SecretsMisconfigured, match=names):
        MetaSecrets.from_json(text, NOW)


def test_an_empty_previous_secret_needs_no_date_and_is_not_a_signing_key():
    secrets = MetaSecrets.from_json(_secret("a", ""), NOW)

    assert secrets.signing_keys(NOW) == (b"a",)


def test_a_read_is_kept_for_the_cache_time_then_read_again(deployed):
    # Given a source that keeps the secret 60 s
    client = _client()
    calls = AwsCalls().watch(client)
    clock = Clock()
    source = MetaSecretSource(client, deployed.resources.secret_arn, clock, cache_seconds=60)

    # When it is asked often within the minute, and once after it
    for _ in range(5):
        source.get()
        clock.advance(11)
    assert calls.calls == [READ]
    clock.advance(10)
    source.get()

    # Then it read Secrets Manager twice
    assert calls.calls == [READ, READ]


def test_a_rotation_reaches_a_warm_source_within_the_cache_time(deployed):
    client = _client()
    clock = Clock()
    source = MetaSecretSource(client, deployed.resources.secret_arn, clock, cache_seconds=60)
    assert source.get().app_secret == META_APP_SECRET

    client.put_secret_value(SecretId=deployed.resources.secret_arn, SecretString=_secret("rotated"))

    clock.advance(59)
    assert source.get().app_secret == META_APP_SECRET
    clock.advance(1)
    assert source.get().app_secret == "rotated"


def test_an_early_read_happens_at_most_once_per_interval(deployed):
    # Given a warm source allowed one early read per 30 s
    client = _client()
    calls = AwsCalls().watch(client)
    clock = Clock()
    source = MetaSecretSource(client, deployed.resources.secret_arn, clock, cache_seconds=120, refresh_seconds=30)
    source.get()
    _client().put_secret_value(SecretId=deployed.resources.secret_arn, SecretString=_secret("rotated"))

    # When early reads are asked for right after the first read, then every second for a minute
    assert source.refresh() is None
    asked = []
    for _ in range(60):
        clock.advance(1)
        asked.append(source.refresh())

    # Then only one in each 30 s was made, and the first one found the rotated secret
    assert calls.calls == [READ, READ, READ]
    made = [s for s in asked if s is not None]
    assert len(made) == 2
    assert made[0].app_secret == "rotated"
    assert source.get().app_secret == "rotated"


def test_an_unreachable_secrets_manager_keeps_the_cached_secret_and_retries_after_a_pause(deployed):
    client = _client()
    calls = AwsCalls().watch(client)
    clock = Clock()
    source = MetaSecretSource(client, deployed.resources.secret_arn, clock, cache_seconds=60, retry_seconds=5)
    source.get()

    # When the cache expires while Secrets Manager is failing
    calls.fail(READ, code="ThrottlingException", status=400)
    clock.advance(60)
    assert source.get().app_secret == META_APP_SECRET
    clock.advance(4)
    assert source.get().app_secret == META_APP_SECRET
    assert calls.calls == [READ, READ]

    # Then after the pause, with Secrets Manager back, it reads again
    calls.heal(READ)
    clock.advance(1)
    source.get()
    assert calls.calls == [READ, READ, READ]


def test_with_nothing_cached_an_unreachable_secrets_manager_fails_fast(deployed):
    client = _client()
    calls = AwsCalls().watch(client)
    calls.fail(READ, code="AccessDeniedException", status=400)
    source = MetaSecretSource(client, deployed.resources.secret_arn, Clock(), retry_seconds=5)

    for _ in range(3):
        with pytest.raises(SecretsUnavailable):
            source.get()

    assert calls.calls == [READ]


def test_a_misconfigured_secret_is_read_again_after_the_pause(deployed):
    client = _client()
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
    assert source.get().signing_keys(clock()) == (b"now-set",)
