"""What on-call looks at: the dashboard per environment, the jobs-shed alarms, and Contributor
Insights rules that rank tenants by work and by deferrals from the consumers' structured logs
(per-tenant metrics would cost a metric per tenant)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from pipeline import metric_names
from pipeline.metric_names import Outcome
from stacks.config.environments import Environment
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.ingress import rejected_signatures
from stacks.constructs.lane import NOISY_GROUPS, QUIET_GROUPS_AGE, LaneConsumer, LaneQueues
from stacks.runtime_env import metrics_namespace

WORK_OUTCOMES = (Outcome.DONE, Outcome.RETRIED, Outcome.DEAD_LETTERED, Outcome.EXPIRED)
DEFERRAL_OUTCOMES = (Outcome.DEFERRED, Outcome.WOULD_DEFER)


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        on_call: OnCall,
        lanes: Sequence[tuple[LaneQueues, LaneConsumer]],
        webhook_function: lambda_.IFunction,
        jobs_function: lambda_.IFunction,
        sweeper_function: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self._env = env
        self._namespace = metrics_namespace(env)
        self._period = on_call.period()
        self.shed_alarms = [
            on_call.alarm(
                self,
                f"JobsShed{consumer.node.id}",
                notice=Notice.CONDITION,
                metric=self._custom(metric_names.JOB_SHED, "jobs", {metric_names.LANE: consumer.lane.name}, "Sum"),
                threshold=env.alarms.jobs_shed_threshold,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                description=f"{consumer.lane.name}: the jobs API is refusing work (503) because the lane cannot meet "
                "its objective. See docs/RUNBOOK.md#jobs-shed.",
            )
            for _, consumer in lanes
        ]
        # Logged and kept, never processed: each one is a delivery nothing acts on.
        self.unparseable_alarm = on_call.alarm(
            self,
            "WebhooksUnparseable",
            notice=Notice.EVENT,
            metric=self._custom(metric_names.WEBHOOK_UNPARSEABLE, "ingress", {}, "Sum"),
            threshold=env.alarms.unparseable_deliveries,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            description=f"The webhook door logged at least {env.alarms.unparseable_deliveries} signed deliveries a "
            "period that it could not route to any lane: kept in the webhook log, never processed. "
            "See docs/RUNBOOK.md#unparseable-deliveries.",
        )
        self.insight_rules = self._contributor_insights(
            [consumer.consumer.log_group.log_group_name for _, consumer in lanes]
        )
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"lanes-{env.name}",
            default_interval=Duration.hours(3),
        )
        self._global_row(webhook_function, jobs_function, sweeper_function)
        for queues, consumer in lanes:
            self._lane_row(queues, consumer)

    def _custom(self, name: str, service: str, dimensions: dict[str, str], statistic: str) -> cloudwatch.Metric:
        # Powertools adds the `service` dimension to every metric it emits; alarms must match it.
        return cloudwatch.Metric(
            namespace=self._namespace,
            metric_name=name,
            dimensions_map={**dimensions, "service": service},
            period=self._period,
            statistic=statistic,
        )

    def _contributor_insights(self, log_groups: list[str]) -> list[cloudwatch.CfnInsightRule]:
        rules = []
        for name, outcomes in (("work", WORK_OUTCOMES), ("deferrals", DEFERRAL_OUTCOMES)):
            body = {
                "Schema": {"Name": "CloudWatchLogRule", "Version": 1},
                "LogGroupNames": log_groups,
                "LogFormat": "JSON",
                "Contribution": {
                    "Keys": ["$.tenant", "$.lane"],
                    "Filters": [{"Match": "$.outcome", "In": list(outcomes)}],
                },
                "AggregateOn": "Count",
            }
            rules.append(
                cloudwatch.CfnInsightRule(
                    self,
                    f"TopTenantsBy{name.capitalize()}",
                    rule_name=f"lanes-{self._env.name}-top-tenants-by-{name}",
                    rule_state="ENABLED",
                    rule_body=Stack.of(self).to_json_string(body),
                )
            )
        return rules

    def _global_row(self, webhook: lambda_.IFunction, jobs: lambda_.IFunction, sweeper: lambda_.IFunction) -> None:
        age = [
            self._custom(metric_names.OLDEST_UNPROCESSED_AGE, "sweeper", {metric_names.SOURCE: source}, "Maximum")
            for source in ("webhook", "job")
        ]
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"# lanes-{self._env.name}\nAge of the oldest unfinished thing is what customers feel. "
                "Runbook: docs/RUNBOOK.md",
                width=24,
                height=2,
            ),
            cloudwatch.GraphWidget(
                title="Oldest unprocessed row (s)",
                left=age,
                left_annotations=[cloudwatch.HorizontalAnnotation(value=self._env.alarms.webhook_age_seconds)],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Webhook door",
                left=[
                    # The function's own invocation count: an EMF line per delivery to say the
                    # same thing cost more log bytes than the rest of the door's output.
                    webhook.metric_invocations(period=self._period, label="Door invocations"),
                    self._custom(metric_names.WEBHOOK_DUPLICATE, "ingress", {}, "Sum"),
                    self._custom(metric_names.WEBHOOK_UNPARSEABLE, "ingress", {}, "Sum"),
                    rejected_signatures(self._env, self._period).with_(label="Signatures refused"),
                ],
                right=[webhook.metric_duration(statistic="p99", period=self._period)],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Functions: errors and throttles",
                left=[fn.metric_errors(period=self._period) for fn in (webhook, jobs, sweeper)],
                right=[fn.metric_throttles(period=self._period) for fn in (webhook, jobs, sweeper)],
                width=8,
            ),
        )

    def _lane_row(self, queues: LaneQueues, consumer: LaneConsumer) -> None:
        lane = consumer.lane
        function = consumer.consumer.function
        lane_dim = {metric_names.LANE: lane.name}
        service = f"consumer-{lane.name}"
        outcomes = [
            self._custom(metric_names.RECORDS, service, {**lane_dim, metric_names.OUTCOME: outcome}, "Sum")
            for outcome in (*WORK_OUTCOMES, *DEFERRAL_OUTCOMES, Outcome.DUPLICATE)
        ]
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                # All tenants against the quiet ones: when only the first is high, one tenant's
                # flood is waiting behind itself (fair queues) and the right axis says how many.
                title=f"{lane.name}: oldest message age (s), all and quiet tenants; noisy tenants",
                left=[
                    queues.queue.metric_approximate_age_of_oldest_message(period=self._period, statistic="Maximum"),
                    queues.queue.metric(QUIET_GROUPS_AGE, period=self._period, statistic="Maximum"),
                ],
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=lane.policy.objective_seconds, label="objective")
                ],
                right=[queues.queue.metric(NOISY_GROUPS, period=self._period, statistic="Maximum")],
                width=6,
            ),
            cloudwatch.GraphWidget(
                title=f"{lane.name}: depth, in flight, dead letters",
                left=[
                    queues.queue.metric_approximate_number_of_messages_visible(period=self._period),
                    queues.queue.metric_approximate_number_of_messages_not_visible(period=self._period),
                ],
                right=[queues.dead_letters.metric_approximate_number_of_messages_visible(period=self._period)],
                width=6,
            ),
            cloudwatch.GraphWidget(title=f"{lane.name}: records by outcome", left=outcomes, width=6, stacked=True),
            cloudwatch.GraphWidget(
                title=f"{lane.name}: concurrency (budget {lane.policy.max_concurrency})",
                left=[
                    cloudwatch.Metric(
                        namespace="AWS/Lambda",
                        metric_name="ConcurrentExecutions",
                        dimensions_map={"FunctionName": function.function_name},
                        period=self._period,
                        statistic="Maximum",
                    )
                ],
                left_annotations=[cloudwatch.HorizontalAnnotation(value=lane.policy.max_concurrency, label="budget")],
                right=[
                    function.metric_throttles(period=self._period),
                    function.metric_errors(period=self._period),
                    self._custom(metric_names.OUT_OF_TIME, service, lane_dim, "Sum"),
                    self._custom(metric_names.UNPROCESSABLE_UNITS, service, lane_dim, "Sum"),
                ],
                width=6,
            ),
        )
