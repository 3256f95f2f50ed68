"""The jobs API's callers, in a secret of their own rather than the function's environment.

Each principal granted one tenant takes about 60 bytes, so 200 producers take about 12 KB, three
times what Lambda allows a function's whole environment. The secret holds them as the config
writes them (stacks/runtime_env.py, `jobs_callers`): they are access rules, not credentials, and
the template says them in full, as it said them before in the function's environment. The jobs
function reads them at its cold start (lambdas/pipeline/adapters/jobs_callers.py); its
JOBS_CALLERS_DIGEST variable changes with them, so a deploy that changes them replaces its warm
instances.
"""

from __future__ import annotations

from aws_cdk import SecretValue
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks import runtime_env
from stacks.config.environments import Environment
from stacks.constructs.removal import keeps_data

JOBS_CALLERS_ID = "JobsCallers"


class JobsCallers(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description=f"lanes-{env.name}: the jobs API's callers and the tenants each may act for",
            secret_string_value=SecretValue.unsafe_plain_text(runtime_env.jobs_callers(env)),
            # Kept as every secret of an environment that keeps its data, though the config writes it.
            removal_policy=keeps_data(env),
        )
        child = self.secret.node.default_child
        assert isinstance(child, secretsmanager.CfnSecret)
        child.override_logical_id(JOBS_CALLERS_ID)
