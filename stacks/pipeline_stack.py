"""One stack per environment, composed from constructs that own their resources."""

from __future__ import annotations

from aws_cdk import Annotations, CfnOutput, Stack
from aws_cdk import Environment as CdkEnvironment
from constructs import Construct

from pipeline.domain.dependencies.lane_pause import pause_reasons
from pipeline.domain.erasure import requests as erasure_rules
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from stacks import runtime_env
from stacks.config.doors import WEBHOOK_PATH
from stacks.config.environments import Environment
from stacks.constructs.after_deploy import AfterDeploy
from stacks.constructs.alarms import OnCall
from stacks.constructs.consumer_grants import grant_consumer
from stacks.constructs.edge import Edge
from stacks.constructs.function import SharedCode
from stacks.constructs.grants import SEND, grant_queue, grant_rows
from stacks.constructs.ingress import Ingress, MetaSecret
from stacks.constructs.jobs_callers import JobsCallers
from stacks.constructs.lane import LaneConsumer, LaneQueues
from stacks.constructs.lane_probe import LaneProbe
from stacks.constructs.meta_send import MetaAccessToken, ReplyCallbackKey
from stacks.constructs.observability import Observability
from stacks.constructs.privacy import ErasureDoor, SenderKey
from stacks.constructs.schedules import Sweeper, Ticks
from stacks.constructs.self_pause import pause_on_refusal
from stacks.constructs.tables import PipelineTables
from stacks.constructs.webhook_domain import WebhookDomain
from stacks.runtime_env import lane_id, stack_name


class PipelineStack(Stack):
    def __init__(self, scope: Construct, *, env: Environment, **kwargs: object) -> None:
        cdk_env = CdkEnvironment(account=env.account, region=env.region) if env.account or env.region else None
        super().__init__(
            scope,
            stack_name(env),
            env=cdk_env,
            description=f"lanes ({env.name}): Meta webhooks and jobs through per-class SQS lanes with budgets",
            termination_protection=env.termination_protection,
            **kwargs,  # type: ignore[arg-type]
        )
        self.config = env
        if env.unattended is not None:
            # Printed by `cdk synth` and `cdk deploy`: the deploy goes ahead because the config says why.
            Annotations.of(self).add_warning_v2(
                "lanes:unattended", f"{env.name} pages nobody or grants no jobs caller: {env.unattended.reason}"
            )
        dumps = self.to_json_string
        shared = SharedCode(self, "Code", env=env)
        self.tables = PipelineTables(self, "Tables", env=env)
        self.on_call = OnCall(self, "OnCall", env=env)
        self.secret = MetaSecret(self, "Meta", env=env).secret
        self.sender_key = SenderKey(self, "Privacy", env=env).secret
        self.access_token = MetaAccessToken(self, "MetaSend", env=env).secret
        self.callback_key = ReplyCallbackKey(self, "ReplyCallbacks", env=env).secret
        self.jobs_callers = JobsCallers(self, "JobsCallers", env=env).secret

        self.lane_queues = {
            lane.name: LaneQueues(self, f"{lane_id(lane.name)}Queues", env=env, lane=lane) for lane in env.lanes
        }
        resources = runtime_env.Resources(
            webhook_table=self.tables.webhook_log.table_name,
            jobs_table=self.tables.jobs.table_name,
            state_table=self.tables.state.table_name,
            data_table=self.tables.data.table_name,
            queue_urls={name: q.queue.queue_url for name, q in self.lane_queues.items()},
            dlq_urls={name: q.dead_letters.queue_url for name, q in self.lane_queues.items()},
            secret_arn=self.secret.secret_arn,
            sender_key_arn=self.sender_key.secret_arn,
            access_token_arn=self.access_token.secret_arn,
            callback_key_arn=self.callback_key.secret_arn,
            accounts_table=self.tables.accounts.table_name,
            jobs_callers_arn=self.jobs_callers.secret_arn,
        )
        self.consumers: dict[str, LaneConsumer] = {}
        self.schedule_rules = []
        for lane in env.lanes:
            consumer = LaneConsumer(
                self,
                f"{lane_id(lane.name)}Lane",
                env=env,
                lane=lane,
                queues=self.lane_queues[lane.name],
                shared=shared,
                environment=runtime_env.consumer(env, lane, resources, dumps),
                on_call=self.on_call,
            )
            grant_consumer(
                consumer.consumer.function,
                lane,
                self.tables,
                self.sender_key,
                env.model(lane.name),
                access_token=self.access_token if lane.policy.task in runtime_env.SENDING_TASKS else None,
                callback_key=self.callback_key if lane.policy.task in runtime_env.SIGNING_TASKS else None,
            )
            pause_on_refusal(
                consumer,
                env,
                pause_reasons(
                    calls_model=env.model(lane.name) is not None,
                    sends=lane.policy.task in runtime_env.SENDING_TASKS,
                    watches_failures=lane.policy.pause_on_failures is not None,
                ),
                self.on_call,
            )
            self.consumers[lane.name] = consumer
            if runtime_env.auto_replies(env, lane):
                # The messages lane stamps conversations and schedules the ai lane's turns itself
                # (tasks/auto_reply.py), reading first whether a message was stamped already.
                grant_queue(consumer.consumer.function, self.lane_queues[runtime_env.AUTO_REPLY_LANE].queue, SEND)
                grant_rows(consumer.consumer.function, self.tables.data, ("dynamodb:GetItem",))
            if lane.tick:
                ticks = Ticks(
                    self, f"{lane_id(lane.name)}Ticks", env=env, lane=lane, queue=self.lane_queues[lane.name].queue
                )
                self.schedule_rules.append(ticks.rule)

        queues = {name: q.queue for name, q in self.lane_queues.items()}
        unknown = WEBHOOK_LANES - set(queues)
        if unknown:
            raise ValueError(f"the webhook router can choose lanes with no queue in {env.name}: {sorted(unknown)}")
        self.ingress = Ingress(
            self,
            "Ingress",
            env=env,
            shared=shared,
            tables=self.tables,
            queues=queues,
            webhook_lanes=WEBHOOK_LANES,
            secret=self.secret,
            sender_key=self.sender_key,
            jobs_callers=self.jobs_callers,
            ingress_environment=runtime_env.ingress(env, resources, dumps),
            jobs_environment=runtime_env.jobs(env, resources, dumps),
            on_call=self.on_call,
        )
        self.erasure = ErasureDoor(
            self,
            "Erasure",
            env=env,
            shared=shared,
            tables=self.tables,
            queue=queues[erasure_rules.LANE],
            meta_secret=self.secret,
            sender_key=self.sender_key,
            environment=runtime_env.erasure(env, resources, dumps),
            on_call=self.on_call,
        )
        self.erasure_routes = self.ingress.serve(
            self.erasure.door.function,
            {
                f"POST {erasure_rules.CALLBACK_PATH}": env.api.erasure,
                f"GET {erasure_rules.CALLBACK_PATH}/{{code}}": env.api.erasure,
            },
            integration_id="ErasureIntegration",
        )
        self.edge = Edge(self, "Edge", env=env, api=self.ingress.api) if env.edge.enabled else None
        self.webhook_domain = (
            WebhookDomain(
                self,
                "WebhookDomain",
                config=env.mutual_tls,
                api=self.ingress.api,
                stage=self.ingress.stage,
                region_pinned=env.region is not None,
            )
            if env.mutual_tls is not None
            else None
        )
        self.sweeper = Sweeper(
            self,
            "Sweeper",
            env=env,
            shared=shared,
            tables=self.tables,
            queues=queues,
            environment=runtime_env.sweeper(env, resources, dumps),
            on_call=self.on_call,
        )
        self.schedule_rules.append(self.sweeper.rule)
        self.lane_probe = LaneProbe(
            self,
            "LaneProbe",
            env=env,
            shared=shared,
            tables=self.tables,
            consumers=self.consumers,
            access_token=self.access_token,
            environment=runtime_env.lane_probe(
                env,
                resources,
                dumps,
                {name: consumer.mapping.event_source_mapping_id for name, consumer in self.consumers.items()},
            ),
            on_call=self.on_call,
        )
        self.schedule_rules.append(self.lane_probe.rule)
        self.observability = Observability(
            self,
            "Observability",
            env=env,
            on_call=self.on_call,
            lanes=[(self.lane_queues[name], consumer) for name, consumer in self.consumers.items()],
            webhook_function=self.ingress.webhook.function,
            jobs_function=self.ingress.jobs.function,
            sweeper_function=self.sweeper.sweeper.function,
        )
        self._outputs()
        # Last, after every other resource: see stacks/constructs/after_deploy.py
        self.after_deploy = AfterDeploy(
            self,
            "AfterDeploy",
            env=env,
            shared=shared,
            tables=self.tables,
            consumers=self.consumers,
            environment=runtime_env.after_deploy(env, resources),
        )
        self.after_deploy.runs_after(self)

    def _webhook_url(self) -> str:
        """Where Meta posts: the edge or the mutual TLS domain where the environment has one (they
        front the API's route), else the webhook door's own URL (the function URL or the route)."""
        if self.edge is not None:
            return f"https://{self.edge.distribution.distribution_domain_name}{WEBHOOK_PATH}"
        if self.config.mutual_tls is not None:
            return f"https://{self.config.mutual_tls.domain_name}{WEBHOOK_PATH}"
        return self.ingress.webhook_url

    def _outputs(self) -> None:
        """What the operator CLI and the local runtime look up, by these exact keys."""
        for name, queues in self.lane_queues.items():
            prefix = lane_id(name)
            consumer = self.consumers[name]
            CfnOutput(self, f"{prefix}QueueUrl", value=queues.queue.queue_url)
            CfnOutput(self, f"{prefix}QueueArn", value=queues.queue.queue_arn)
            CfnOutput(self, f"{prefix}DlqUrl", value=queues.dead_letters.queue_url)
            CfnOutput(self, f"{prefix}DlqArn", value=queues.dead_letters.queue_arn)
            CfnOutput(self, f"{prefix}MappingId", value=consumer.mapping.event_source_mapping_id)
            CfnOutput(self, f"{prefix}FunctionName", value=consumer.consumer.function.function_name)
        CfnOutput(self, "ApiUrl", value=self.ingress.url)
        CfnOutput(self, "WebhookUrl", value=self._webhook_url(), description="The callback URL to give Meta")
        CfnOutput(self, "JobsFunctionName", value=self.ingress.jobs.function.function_name)
        CfnOutput(self, "WebhookFunctionName", value=self.ingress.webhook.function.function_name)
        CfnOutput(self, "WebhookTableName", value=self.tables.webhook_log.table_name)
        CfnOutput(self, "JobsTableName", value=self.tables.jobs.table_name)
        CfnOutput(self, "StateTableName", value=self.tables.state.table_name)
        CfnOutput(self, "DataTableName", value=self.tables.data.table_name)
        CfnOutput(self, "AccountsTableName", value=self.tables.accounts.table_name)
        CfnOutput(self, "AlarmTopicArn", value=self.on_call.topic.topic_arn)
        CfnOutput(self, "MetaSecretArn", value=self.secret.secret_arn)
        CfnOutput(self, "MetaAccessTokenArn", value=self.access_token.secret_arn)
        CfnOutput(self, "SenderKeyArn", value=self.sender_key.secret_arn)
        CfnOutput(self, "ReplyCallbackKeyArn", value=self.callback_key.secret_arn)
        CfnOutput(self, "LaneProbeFunctionName", value=self.lane_probe.probe.function.function_name)
