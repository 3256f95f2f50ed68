"""One lane: its queue, dead-letter queue, consumer, event source mapping and alarms."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from pipeline import metric_filters, metric_names
from stacks.config.environments import Environment
from stacks.config.lanes import DLQ_RETENTION_DAYS, QUEUE_RETENTION_DAYS, Lane
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode
from stacks.constructs.grants import CONSUME, SEND, grant_queue
from stacks.constructs.removal import keeps_data
from stacks.constructs.reply_alarms import failed_replies_alarm
from stacks.runtime_env import SENDING_TASKS, lane_id, metrics_namespace, stack_name

DLQ_RETENTION = Duration.days(DLQ_RETENTION_DAYS)
QUEUE_RETENTION = Duration.days(QUEUE_RETENTION_DAYS)
QUIET_GROUPS_AGE = "ApproximateAgeOfOldestMessageInQuietGroups"
NOISY_GROUPS = "ApproximateNumberOfNoisyGroups"
"""Fair-queue metrics SQS publishes (namespace AWS/SQS, dimension QueueName)."""


def lane_queue_name(env: Environment, lane_name: str) -> str:
    """The lane queue's physical name, fixed so its dead-letter queue can name it (see below)."""
    return f"{stack_name(env)}-{lane_name}"


def queue_logical_id(lane_name: str) -> str:
    return f"{lane_id(lane_name)}Queue"


def dlq_logical_id(lane_name: str) -> str:
    return f"{lane_id(lane_name)}DeadLetterQueue"


class LaneQueues(Construct):
    """Queue and DLQ first, so every function that sends to the lane can be given their URLs
    before the consumer exists."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment, lane: Lane) -> None:
        super().__init__(scope, construct_id)
        removal = keeps_data(env)
        queue_name = lane_queue_name(env, lane.name)
        own_queue = sqs.Queue.from_queue_arn(
            self, "OwnQueue", Stack.of(self).format_arn(service="sqs", resource=queue_name)
        )
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            retention_period=DLQ_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            # Only this lane's queue may dead-letter here. Everything in this DLQ is sent back to
            # that queue when it is redriven (`lanectl dlq redrive`, SQS's move task), so a message
            # another queue dead-lettered here, by a redrive policy set wrongly anywhere in the
            # account, would be replayed into this lane's consumer. The queue's ARN is built from
            # its name, not referenced: the queue's redrive policy already references this DLQ, and
            # CloudFormation refuses a cycle. That is why the lane queue has a fixed name.
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE, source_queues=[own_queue]
            ),
            removal_policy=removal,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=queue_name,
            visibility_timeout=Duration.seconds(lane.visibility_timeout_seconds),
            retention_period=QUEUE_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letters, max_receive_count=lane.policy.max_receives),
            # A lane queue is never anyone's dead-letter queue.
            redrive_allow_policy=sqs.RedriveAllowPolicy(redrive_permission=sqs.RedrivePermission.DENY_ALL),
            removal_policy=removal,
        )
        for queue, logical_id in (
            (self.queue, queue_logical_id(lane.name)),
            (self.dead_letters, dlq_logical_id(lane.name)),
        ):
            child = queue.node.default_child
            assert isinstance(child, sqs.CfnQueue)
            child.override_logical_id(logical_id)


class LaneConsumer(Construct):
    """The lane's consumer: its concurrency is the budget of the dependency behind it, set as the
    mapping's MaximumConcurrency and guaranteed by a reservation at least as large (where the
    environment reserves), so Lambda throttles never spend a message's receive count."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        lane: Lane,
        queues: LaneQueues,
        shared: SharedCode,
        environment: dict[str, str],
        on_call: OnCall,
    ) -> None:
        super().__init__(scope, construct_id)
        self.lane = lane
        self.consumer = PipelineFunction(
            self,
            "Consumer",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.consumer.handler",
                environment=environment,
                timeout_seconds=lane.policy.timeout_seconds,
                memory_mb=lane.memory_mb,
                description=f"{lane.name} lane consumer: {lane.purpose}"[:256],
                reserved_concurrency=lane.reserved_concurrency if env.reserved_concurrency else None,
            ),
        )
        self.consumer.count_lines(metric_filters.CONSUMER, metrics_namespace(env))
        function = self.consumer.function
        # Deferrals and continuations are re-sent to the lane; permanent failures go straight to its DLQ.
        grant_queue(function, queues.queue, (*CONSUME, *SEND))
        grant_queue(function, queues.dead_letters, SEND)
        self.mapping = lambda_.EventSourceMapping(
            self,
            "Mapping",
            target=function,
            event_source_arn=queues.queue.queue_arn,
            batch_size=lane.policy.batch_size,
            max_batching_window=Duration.seconds(lane.batch_window_seconds) if lane.batch_window_seconds else None,
            max_concurrency=lane.policy.max_concurrency,
            report_batch_item_failures=True,
        )
        self.pause_policy: iam.Policy | None = None
        self.paused_alarms: dict[str, cloudwatch.Alarm] = {}
        """By stop-the-lane reason, on a lane that pauses itself (constructs/self_pause.py)."""
        self._alarms(env, lane, queues, function, on_call)

    def _alarms(
        self, env: Environment, lane: Lane, queues: LaneQueues, function: lambda_.Function, on_call: OnCall
    ) -> None:
        period = on_call.period()
        self.age_alarm = on_call.alarm(
            self,
            "OldestMessageAge",
            notice=Notice.CONDITION,
            metric=queues.queue.metric_approximate_age_of_oldest_message(period=period, statistic="Maximum"),
            threshold=lane.policy.objective_seconds,
            description=f"{lane.name}: the oldest message has waited longer than the lane's "
            f"{lane.policy.objective_seconds} s objective. Customers are waiting. See docs/RUNBOOK.md#lane-age.",
        )
        self.quiet_age_alarm = on_call.alarm(
            self,
            "QuietTenantsAge",
            notice=Notice.CONDITION,
            # What a well-behaved tenant waits: SQS fair queues (every message carries its tenant as
            # MessageGroupId) leave one tenant's flood out of this age, so it pages only when
            # tenants who are not flooding wait past the objective.
            metric=queues.queue.metric(QUIET_GROUPS_AGE, period=period, statistic="Maximum"),
            threshold=lane.policy.objective_seconds,
            description=f"{lane.name}: a quiet tenant's oldest message has waited longer than the lane's "
            f"{lane.policy.objective_seconds} s objective: the lane is behind for everyone, not only for a noisy "
            "tenant. See docs/RUNBOOK.md#quiet-tenants-waiting.",
        )
        self.dlq_alarm = on_call.alarm(
            self,
            "DeadLetters",
            notice=Notice.EVENT,
            # Depth, not NumberOfMessagesSent: messages SQS moves by redrive never count as "sent".
            metric=queues.dead_letters.metric_approximate_number_of_messages_visible(
                period=period, statistic="Maximum"
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            description=f"{lane.name}: work is in the dead-letter queue and will not be retried on its own. "
            "See docs/RUNBOOK.md#dead-letters.",
        )
        self.errors_alarm = on_call.alarm(
            self,
            "ConsumerErrors",
            notice=Notice.CONDITION,
            metric=function.metric_errors(period=period, statistic="Sum"),
            threshold=env.alarms.errors_threshold,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description=f"{lane.name}: the consumer itself is failing (not a record: records fail through "
            "batchItemFailures). See docs/RUNBOOK.md#consumer-errors.",
        )
        self.throttles_alarm = on_call.alarm(
            self,
            "ConsumerThrottles",
            notice=Notice.EVENT,
            metric=function.metric_throttles(period=period, statistic="Sum"),
            threshold=0,
            evaluation_periods=1,
            description=f"{lane.name}: Lambda throttled the consumer, so the concurrency budget is misconfigured "
            "(reservation below MaximumConcurrency or the account quota exhausted). See docs/RUNBOOK.md#throttles.",
        )
        self.unanswered_alarm = (
            on_call.alarm(
                self,
                "UnansweredReplies",
                notice=Notice.EVENT,
                metric=cloudwatch.Metric(
                    namespace=metrics_namespace(env),
                    metric_name=metric_names.REPLIES_UNANSWERED,
                    dimensions_map={metric_names.LANE: lane.name, "service": f"consumer-{lane.name}"},
                    period=period,
                    statistic="Sum",
                ),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                description=f"{lane.name}: a customer's turn got no reply: Meta refused it for good (outside the "
                "service window, undeliverable) or a send's outcome was never confirmed (no answer, or a 5xx "
                "that did not say Meta took nothing, and no status came back), and it is not resent. "
                "See docs/RUNBOOK.md#unanswered-replies.",
            )
            if lane.policy.task in SENDING_TASKS
            else None
        )
        self.failed_alarm = failed_replies_alarm(self, env, lane, on_call)
        self.out_of_time_alarm = on_call.alarm(
            self,
            "OutOfTime",
            notice=Notice.EVENT,
            metric=cloudwatch.Metric(
                namespace=metrics_namespace(env),
                metric_name=metric_names.OUT_OF_TIME,
                # Powertools adds the `service` dimension to every metric it emits; alarms must match it.
                dimensions_map={metric_names.LANE: lane.name, "service": f"consumer-{lane.name}"},
                period=period,
                statistic="Sum",
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            # One is enough: each returned a whole batch to SQS with a receive spent on every record.
            evaluation_periods=1,
            description=f"{lane.name}: a consumer invocation ran out of time before settling its batch, so its "
            "records went back to SQS with a receive spent, attempted or not. See docs/RUNBOOK.md#out-of-time.",
        )
