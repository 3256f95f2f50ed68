"""Sending replies through Meta: the access token (a system user's token from Meta Business
Manager), in Secrets Manager as `{"access_token": "..."}`, set by an operator after the first
deploy and rotated as docs/RUNBOOK.md says, never in an environment variable or the template; and
the reply callback key replies' references are signed with, generated at the first deploy."""

from __future__ import annotations

import json

from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from pipeline.domain.dependencies.callback_keys import KEY_FIELD
from stacks.config.environments import Environment
from stacks.constructs.generated_key import generated_key
from stacks.constructs.removal import keeps_data

ACCESS_TOKEN_ID = "MetaAccessToken"  # noqa: S105 (a logical ID, not a secret)
CALLBACK_KEY_ID = "ReplyCallbackKey"


class MetaAccessToken(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description=f"lanes-{env.name}: Meta access token the ai lane sends replies with",
            # Pinned by tests/infra/test_secret_generation.py: any change to the generator makes the
            # next deploy generate the value again, over the stored one.
            generate_secret_string=secretsmanager.SecretStringGenerator(
                # The generated field is never used: the token is Meta's, set by an operator.
                secret_string_template=json.dumps({"access_token": ""}),
                generate_string_key="unused",
                exclude_punctuation=True,
                password_length=16,
            ),
            removal_policy=keeps_data(env),
        )
        child = self.secret.node.default_child
        assert isinstance(child, secretsmanager.CfnSecret)
        child.override_logical_id(ACCESS_TOKEN_ID)


class ReplyCallbackKey(Construct):
    """The HMAC key of replies' references (`biz_opaque_callback_data`, domain/dependencies/meta_send.py):
    read by the lanes that sign them (ai) and verify them (messages) only. Rotated by hand as
    docs/RUNBOOK.md#rotating-the-reply-callback-key says; losing it only strands the statuses of
    replies in flight, so it goes with the stack like the access token."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = generated_key(
            self,
            env=env,
            description="the key replies' callback references are signed with",
            field=KEY_FIELD,
            logical_id=CALLBACK_KEY_ID,
        )
