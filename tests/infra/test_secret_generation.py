"""Every secret's GenerateSecretString, pinned. CloudFormation treats a change to it as a new
value: it generates the secret again and writes it over the stored one (the secret's ARN stays).
For the sender key that makes every stored sender hash unfindable by an erasure request; for Meta's
secret it wipes the app secret an operator set, so the door refuses every delivery, and changes the
verify token Meta holds; for the access token it wipes the token, so every send is refused."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.xdist_group("synth")

PINNED = {
    "SenderKey": {
        "ExcludePunctuation": True,
        "GenerateStringKey": "sender_hash_key",
        "PasswordLength": 64,
        "SecretStringTemplate": "{}",
    },
    "MetaSecret": {
        "ExcludePunctuation": True,
        "GenerateStringKey": "verify_token",
        "PasswordLength": 40,
        "SecretStringTemplate": json.dumps({"app_secret": "", "previous_app_secret": ""}),
    },
    "MetaAccessToken": {
        "ExcludePunctuation": True,
        "GenerateStringKey": "unused",
        "PasswordLength": 16,
        "SecretStringTemplate": json.dumps({"access_token": ""}),
    },
    "ReplyCallbackKey": {
        "ExcludePunctuation": True,
        "GenerateStringKey": "callback_key",
        "PasswordLength": 64,
        "SecretStringTemplate": "{}",
    },
    # Written whole from the config at every deploy (SecretString), nothing generated: it must stay so.
    "JobsCallers": None,
}

WHY = {
    "SenderKey": "a new sender key makes every stored sender hash unfindable by an erasure request",
    "MetaSecret": "the app secret an operator set is wiped (the door refuses every delivery) and the "
    "verify token Meta holds changes",
    "MetaAccessToken": "the access token an operator set is wiped, so every send through Meta is refused",
    "ReplyCallbackKey": "the key the replies in flight were signed with is gone, so their statuses no longer "
    "verify and those turns end outcome_unknown; a key an operator rotated in is overwritten",
    "JobsCallers": "a generated value would stand where the config's callers belong, refusing every producer",
}


def test_no_secrets_generated_value_is_ever_regenerated_by_a_deploy(synthesized):
    # Given every secret the stack makes
    secrets = synthesized.resources("AWS::SecretsManager::Secret")
    # Then each one is pinned here, with the reason its value must never be generated again
    unpinned = sorted(set(secrets) - set(PINNED))
    assert not unpinned, (
        f"{unpinned}: pin the GenerateSecretString of every new secret in PINNED, and say in WHY what "
        "regenerating its value would break"
    )
    for logical_id, resource in secrets.items():
        # And its generator is exactly what it was: any change to it regenerates the stored value
        assert resource["Properties"].get("GenerateSecretString") == PINNED[logical_id], (
            f"{logical_id}: changing GenerateSecretString makes CloudFormation generate the secret's value "
            f"again on the next deploy, overwriting the stored one: {WHY[logical_id]}. Leave it as it is; a "
            "different generator belongs to a new secret with its own logical id."
        )
