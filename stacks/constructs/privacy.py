"""Personal data's own resources: the key sender hashes are made with, the function behind Meta's
data-deletion callback, and what the erasure lane's consumer may do beyond other consumers."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from pipeline import metric_names, schema
from pipeline.adapters.sender_key import KEY_FIELD
from stacks.config.environments import Environment
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode
from stacks.constructs.function_alarms import function_alarms
from stacks.constructs.generated_key import generated_key
from stacks.constructs.grants import SEND, grant_index_query, grant_queue, grant_rows, grant_secret
from stacks.constructs.tables import PipelineTables
from stacks.runtime_env import metrics_namespace

ERASURE_TIMEOUT_SECONDS = 10
SENDER_KEY_ID = "SenderKey"


class SenderKey(Construct):
    """A key generated at the first deploy and never rotated: every row and item about a person is
    indexed by an HMAC under it (lambdas/pipeline/domain/senders.py), and a new key would make all of
    those unfindable by an erasure request. Kept, like the tables, where the environment keeps its
    data: deleting it with the stack orphans every index entry in retained tables."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = generated_key(
            self,
            env=env,
            description="the key sender hashes are made with; never rotate it",
            field=KEY_FIELD,
            logical_id=SENDER_KEY_ID,
        )


class ErasureDoor(Construct):
    """The function behind Meta's data-deletion callback and the erasure status page: verifies the
    signed request, writes the erasure's job row and sends it to the erasure lane. Its routes are
    served by the Ingress API (Ingress.serve), each with its own throttle."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        shared: SharedCode,
        tables: PipelineTables,
        queue: sqs.IQueue,
        meta_secret: secretsmanager.ISecret,
        sender_key: secretsmanager.ISecret,
        environment: dict[str, str],
        on_call: OnCall,
    ) -> None:
        super().__init__(scope, construct_id)
        self.door = PipelineFunction(
            self,
            "Function",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.erasure.handler",
                environment=environment,
                timeout_seconds=ERASURE_TIMEOUT_SECONDS,
                memory_mb=256,
                description="Meta data-deletion callback: verify, request the erasure, answer with its status page",
            ),
        )
        function = self.door.function
        # The erasure's job row with its count (one transaction), and the status page's read of it.
        grant_rows(function, tables.jobs, ("dynamodb:PutItem", "dynamodb:GetItem"))
        # UpdateItem: the queued count; GetItem and PutItem: the person's open erasure and the ids
        # linked to an app-scoped id.
        grant_rows(function, tables.state, ("dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem"))
        grant_secret(function, meta_secret)
        grant_secret(function, sender_key)
        grant_queue(function, queue, SEND)
        self.function_alarms = function_alarms(
            self, on_call, "Erasure", function, ERASURE_TIMEOUT_SECONDS, "Meta's data-deletion callback"
        )
        namespace = metrics_namespace(env)
        self.failure_alarms = [
            on_call.alarm(
                self,
                f"{metric_names.ERASURE_FAILED}{''.join(part.capitalize() for part in reason.split('_'))}",
                notice=Notice.EVENT,
                metric=cloudwatch.Metric(
                    namespace=namespace,
                    metric_name=metric_names.ERASURE_FAILED,
                    dimensions_map={metric_names.REASON: reason, "service": "erasure"},
                    period=on_call.period(),
                    statistic="Sum",
                ),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                description=f"Meta's data-deletion callback answered 5xx ({reason}): a person's request to be "
                "forgotten was not taken. See docs/RUNBOOK.md#erasure-failures.",
            )
            for reason in metric_names.ErasureFailure.ALL
        ]


def grant_erasure(function: lambda_.IFunction, tables: PipelineTables) -> None:
    """What the erasure task (tasks/erase.py, adapters/erasure.py) does beyond any consumer: scan
    the webhook log (it has no sender index), query the jobs' and the data's sender indexes and the
    person's own partition of the data table, read each row found and put its tombstone over it,
    and delete items and body parts in batches."""
    grant_rows(
        function,
        tables.webhook_log,
        ("dynamodb:Scan", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:BatchWriteItem"),
    )
    grant_index_query(function, tables.jobs, schema.SENDER_INDEX)
    grant_rows(function, tables.jobs, ("dynamodb:GetItem", "dynamodb:PutItem"))
    grant_index_query(function, tables.data, schema.SENDER_INDEX)
    grant_rows(function, tables.data, ("dynamodb:Query", "dynamodb:BatchWriteItem"))
    grant_rows(function, tables.state, ("dynamodb:BatchWriteItem",))
