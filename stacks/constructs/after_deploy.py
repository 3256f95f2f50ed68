"""The custom resource that runs last in a deploy (lambdas/pipeline/handlers/after_deploy.py).

Deletion protection: a table protected in the template cannot be deleted when the create that
made it rolls back (CloudFormation deletes it: `RetainExceptOnCreate`), so the stack stopped in
ROLLBACK_FAILED. The template leaves protection out, and this resource, which depends on every
other resource of the stack and so is created after them all, turns it on: a first create that
fails rolls back cleanly and can be retried as it is, and the tables are protected from the end
of the first successful deploy on. A failure of this resource itself undoes what it set.

Pauses: an update CloudFormation makes to a lane's mapping may send it the template's state
(enabled, the full MaximumConcurrency), undoing an operator's pause or a lane's own. This resource
runs after the mappings' updates and stops again every mapping whose lane has a pause mark. It
runs on a create and on every update that changes its properties, which carry the mappings' ids
and a digest of what the template sets on the mappings and tables: a deploy that touches either
runs it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from aws_cdk import ArnFormat, CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from pipeline.handlers.after_deploy import SERVICE
from stacks.config.environments import Environment
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode
from stacks.constructs.grants import grant_rows, keep_unexercised
from stacks.constructs.lane import LaneConsumer
from stacks.constructs.tables import PipelineTables

RESOURCE_TYPE = "Custom::AfterDeploy"
TIMEOUT_SECONDS = 120
"""Five DescribeTable and UpdateTable calls, one BatchGetItem and a mapping read per paused lane."""


def template_digest(env: Environment) -> str:
    """Changes whenever what the template sets on a lane's mapping or a table can (the lanes' and
    the retention's config)."""
    return hashlib.sha256(repr((env.lanes, env.retention, env.retain_stateful)).encode()).hexdigest()[:16]


class AfterDeploy(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        shared: SharedCode,
        tables: PipelineTables,
        consumers: Mapping[str, LaneConsumer],
        environment: dict[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.guard = PipelineFunction(
            self,
            "Guard",
            shared=shared,
            spec=FunctionSpec(
                handler=f"pipeline.handlers.{SERVICE.replace('-', '_')}.handler",
                environment=environment,
                timeout_seconds=TIMEOUT_SECONDS,
                memory_mb=256,
                description="After a deploy: tables' deletion protection on, paused lanes' mappings stopped again",
            ),
        )
        function = self.guard.function
        protected = list(tables.all) if env.retain_stateful else []
        stack = Stack.of(self)
        role = self.guard.role
        if protected:
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
                    resources=[table.table_arn for table in protected],
                )
            )
        grant_rows(function, tables.state, ("dynamodb:BatchGetItem",))
        mapping_arns = [
            stack.format_arn(
                service="lambda",
                resource="event-source-mapping",
                resource_name=consumer.mapping.event_source_mapping_id,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for consumer in consumers.values()
        ]
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"], resources=mapping_arns
            )
        )
        keep_unexercised(
            role,
            (
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "dynamodb:DescribeTable",
                "dynamodb:UpdateTable",
                "dynamodb:BatchGetItem",
                "lambda:GetEventSourceMapping",
                "lambda:UpdateEventSourceMapping",
            ),
            "CloudFormation runs this function at the end of a deploy; the local runtime deploys once and "
            "runs no custom resource (tests/unit/deploys/ test the handler against moto)",
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=function.function_arn,
            resource_type=RESOURCE_TYPE,
            service_timeout=Duration.seconds(TIMEOUT_SECONDS + 60),
            properties={
                "Tables": [table.table_name for table in protected],
                "StateTable": tables.state.table_name,
                "Mappings": {lane: consumer.mapping.event_source_mapping_id for lane, consumer in consumers.items()},
                "Digest": template_digest(env),
            },
        )

    def runs_after(self, scope: Construct) -> None:
        """Makes this resource depend on every other construct of `scope` (the stack), so
        CloudFormation creates and updates it after all of them."""
        for child in scope.node.children:
            if child is not self:
                self.resource.node.add_dependency(child)
