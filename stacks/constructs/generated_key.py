"""A key the stack generates once and keeps: 64 characters under one field of a JSON secret.

The generator is pinned by tests/infra/test_secret_generation.py: any change to it makes the next
deploy generate the value again, over the stored one."""

from __future__ import annotations

import json

from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks.config.environments import Environment
from stacks.constructs.removal import keeps_data


def generated_key(
    scope: Construct, *, env: Environment, description: str, field: str, logical_id: str
) -> secretsmanager.Secret:
    secret = secretsmanager.Secret(
        scope,
        "Secret",
        description=f"lanes-{env.name}: {description}",
        generate_secret_string=secretsmanager.SecretStringGenerator(
            secret_string_template=json.dumps({}),
            generate_string_key=field,
            exclude_punctuation=True,
            password_length=64,
        ),
        removal_policy=keeps_data(env),
    )
    child = secret.node.default_child
    assert isinstance(child, secretsmanager.CfnSecret)
    child.override_logical_id(logical_id)
    return secret
