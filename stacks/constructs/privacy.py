"""Personal data's own resources: the key sender hashes are made with."""

from __future__ import annotations

import json

from aws_cdk import RemovalPolicy
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from pipeline.adapters.sender_key import KEY_FIELD
from stacks.config.environments import Environment

SENDER_KEY_ID = "SenderKey"


class SenderKey(Construct):
    """A key generated at the first deploy and never rotated: every row and item about a person is
    indexed by an HMAC under it (lambdas/pipeline/domain/senders.py), and a new key would make all of
    those unfindable by an erasure request. Kept, like the tables, where the environment keeps its
    data: deleting it with the stack orphans every index entry in retained tables."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description=f"lanes-{env.name}: the key sender hashes are made with; never rotate it",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({}),
                generate_string_key=KEY_FIELD,
                exclude_punctuation=True,
                password_length=64,
            ),
            removal_policy=RemovalPolicy.RETAIN if env.retain_stateful else RemovalPolicy.DESTROY,
        )
        child = self.secret.node.default_child
        assert isinstance(child, secretsmanager.CfnSecret)
        child.override_logical_id(SENDER_KEY_ID)
