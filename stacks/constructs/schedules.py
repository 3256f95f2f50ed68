"""Schedules: the sweeper on its own function (never on a lane it watches, so its age metric keeps
publishing when a lane falls behind) and the ticks that feed tick-driven lanes."""

from __future__ import annotations

import math

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from pipeline import metric_names, schema
from pipeline.domain.sweep.run import SWEPT_SOURCES, source_lanes
from stacks.config.environments import Environment
from stacks.config.lanes import Lane
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode
from stacks.constructs.grants import DEPTH, SEND, grant_index_query, grant_queue, grant_rows
from stacks.constructs.tables import PipelineTables
from stacks.runtime_env import PERIOD_METADATA, lane_id, metrics_namespace

SILENT_PERIODS = 3
"""Report-less alarm periods in a row before a silent sweeper pages. Each period is at least a
sweep, so a healthy sweeper leaves none empty; one missed or late sweep leaves at most two. Before
the first sweep nothing pages: the alarm waits in INSUFFICIENT_DATA for its first report
(`Notice.SILENCE`)."""


def recovery_seconds(env: Environment) -> float:
    """How old a row the sweeper recovers as designed gets before it is sent again: a row is lost
    only past the sweeper's grace, and the next sweep comes at most a period later. An age alarm
    below this pages on every send failure the sweeper repairs on its own."""
    return env.sweeper.settings.grace_seconds + env.sweeper.period_seconds


def sweep_alarm_period(env: Environment) -> int:
    """The period of the alarms on what the sweeper reports: never shorter than a sweep (shorter,
    a healthy sweeper leaves periods without a report), nor than the environment's alarm period,
    and one CloudWatch accepts (10 or 30 s, or a multiple of a minute). Where alarm periods are a
    minute or more (on AWS), that is also the schedule's rate, which EventBridge rounds up to whole
    minutes; the local runtime sweeps at the configured period."""
    wanted = max(env.sweeper.period_seconds, env.alarms.period_seconds)
    for short in (10, 30):
        if wanted <= short:
            return short
    return math.ceil(wanted / 60) * 60


def _rate(period_seconds: int) -> events.Schedule:
    return events.Schedule.rate(Duration.minutes(max(1, math.ceil(period_seconds / 60))))


def schedule_rule(scope: Construct, construct_id: str, period_seconds: int, description: str) -> events.Rule:
    """A rate schedule carrying its true period for the local runtime (PERIOD_METADATA)."""
    rule = events.Rule(scope, construct_id, schedule=_rate(period_seconds), description=description)
    child = rule.node.default_child
    assert isinstance(child, events.CfnRule)
    child.add_metadata(PERIOD_METADATA, period_seconds)
    return rule


class Sweeper(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        shared: SharedCode,
        tables: PipelineTables,
        queues: dict[str, sqs.Queue],
        environment: dict[str, str],
        on_call: OnCall,
    ) -> None:
        super().__init__(scope, construct_id)
        self.sweeper = PipelineFunction(
            self,
            "Sweeper",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.sweeper.handler",
                environment=environment,
                timeout_seconds=env.sweeper.timeout_seconds,
                memory_mb=512,
                description="Replays logged work the queues lost; abandons what keeps failing",
                # One sweep at a time: overlapping sweeps are safe (replays are conditional) but wasteful.
                reserved_concurrency=1 if env.reserved_concurrency else None,
            ),
        )
        function = self.sweeper.function
        # Query the pending index, read the rows, claim a replay or abandon with a conditional
        # update (an abandoned job also gives back its tenant's queued slot in the state table,
        # where the sweeper also keeps its sightings of lane depths and reads the drain counts).
        for table in (tables.webhook_log, tables.jobs):
            grant_rows(function, table, ("dynamodb:BatchGetItem", "dynamodb:UpdateItem"))
            grant_index_query(function, table, schema.PENDING_INDEX)
        grant_rows(function, tables.state, ("dynamodb:BatchGetItem", "dynamodb:UpdateItem"))
        if env.accounts is not None:
            # Every source account's last-seen item: one Query of their partition (never a scan).
            grant_rows(function, tables.accounts, ("dynamodb:Query",))
        # A lost row is replayed to its lane, whose depth says whether it is merely late; a job
        # row may be of any lane.
        for queue in queues.values():
            grant_queue(function, queue, (*SEND, *DEPTH))
        self.rule = schedule_rule(
            self, "Schedule", env.sweeper.period_seconds, f"lanes-{env.name}: sweep for lost and abandoned work"
        )
        # A missed sweep is made up by the next one; retrying an old sweep only overlaps it.
        self.rule.add_target(targets.LambdaFunction(function, retry_attempts=0))
        self._alarms(env, on_call)

    def _alarms(self, env: Environment, on_call: OnCall) -> None:
        namespace = metrics_namespace(env)
        period = Duration.seconds(sweep_alarm_period(env))

        def metric(name: str, source: str, statistic: str, lane: str | None = None) -> cloudwatch.Metric:
            dimensions = {metric_names.SOURCE: source, "service": "sweeper"}
            if lane is not None:
                dimensions[metric_names.LANE] = lane
            return cloudwatch.Metric(
                namespace=namespace, metric_name=name, dimensions_map=dimensions, period=period, statistic=statistic
            )

        # A period without a report is neither an age nor its absence: the age alarms keep their
        # state through it, and a sweeper that stopped is the silence alarms' to page.
        recovery = recovery_seconds(env)
        if env.alarms.webhook_age_seconds <= recovery:
            raise ValueError(
                f"{env.name}: alarms webhook_age_seconds ({env.alarms.webhook_age_seconds}) must exceed the "
                f"sweeper's grace and period ({recovery:g} s), or every send failure it recovers pages"
            )
        self.webhook_age_alarm = on_call.alarm(
            self,
            "UnprocessedWebhookAge",
            notice=Notice.CONDITION,
            metric=metric(metric_names.OLDEST_UNPROCESSED_AGE, "webhook", "Maximum"),
            threshold=env.alarms.webhook_age_seconds,
            missing=cloudwatch.TreatMissingData.IGNORE,
            description=f"A Meta delivery has waited over {env.alarms.webhook_age_seconds} s unprocessed. "
            "See docs/RUNBOOK.md#unprocessed-webhooks.",
        )
        # Per lane, against the lane's own objective: one threshold for every job would sit in
        # ALARM through a normal bulk import (half an hour) and so page nobody on a real loss. A row
        # the sweeper recovers waits its recovery before it is sent again, then the lane's objective.
        lanes = [lane.name for lane in env.lanes]
        objectives = {lane.name: lane.policy.objective_seconds + recovery for lane in env.lanes}
        self.lane_age_alarms = [
            on_call.alarm(
                self,
                f"Unprocessed{source.capitalize()}Age{lane_id(lane)}",
                notice=Notice.CONDITION,
                metric=metric(metric_names.OLDEST_UNPROCESSED_AGE, source, "Maximum", lane),
                threshold=objectives[lane],
                missing=cloudwatch.TreatMissingData.IGNORE,
                description=f"A {source} on lane {lane} has waited unprocessed {objectives[lane]:g} s: the lane's "
                f"objective past what the sweeper takes to send a lost one again ({recovery:g} s). "
                f"See docs/RUNBOOK.md#unprocessed-{source}s-on-a-lane.",
            )
            for source in SWEPT_SOURCES
            for lane in source_lanes(source, lanes)
        ]
        self.expired_alarms = [
            on_call.alarm(
                self,
                f"Expired{source.capitalize()}s",
                notice=Notice.EVENT,
                metric=metric(metric_names.EXPIRED_UNPROCESSED, source, "Sum"),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                description=f"A {source} reached the end of its retention still pending: accepted work that "
                "was never done. See docs/RUNBOOK.md#expired-unprocessed.",
            )
            for source in SWEPT_SOURCES
        ]
        # The sweeper publishes each source's age on every run, 0 when nothing is pending, so its
        # reports are a heartbeat: a watchdog gone silent is as bad as the age it watches. A period
        # with a report is OK whatever it says; SILENT_PERIODS without one in a row leave the alarm
        # no data at all, and that (INSUFFICIENT_DATA) is what pages.
        self.silent_alarms = [
            on_call.alarm(
                self,
                f"SilentOn{source.capitalize()}s",
                notice=Notice.SILENCE,
                metric=metric(metric_names.OLDEST_UNPROCESSED_AGE, source, "SampleCount"),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                evaluation_periods=SILENT_PERIODS,
                description=f"The sweeper has reported no {source} ages for {SILENT_PERIODS} periods of "
                f"{sweep_alarm_period(env)} s: it is not running, or fails before it reports, and lost "
                f"{source}s are not being replayed. See docs/RUNBOOK.md#sweeper-silent.",
            )
            for source in ("webhook", "job")
        ]
        self.quiet_accounts_alarm = self._quiet_accounts_alarm(env, on_call, period)
        self.abandoned_alarms = [
            on_call.alarm(
                self,
                f"Abandoned{source.capitalize()}s",
                notice=Notice.EVENT,
                metric=metric(metric_names.ABANDONED, source, "Sum"),
                threshold=1,
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                description=f"A {source} was abandoned after repeated replays: something in it keeps killing its "
                "consumer. See docs/RUNBOOK.md#abandoned.",
            )
            for source in ("webhook", "job")
        ]

    def _quiet_accounts_alarm(self, env: Environment, on_call: OnCall, period: Duration) -> cloudwatch.Alarm | None:
        """Source accounts that normally send and are quiet too long: one series whatever their
        number. A sweep that could not read the items publishes nothing, and the alarm keeps its
        state (a sweeper that stopped pages on its own silence alarms)."""
        if env.accounts is None:
            return None
        silence = env.accounts.silence
        return on_call.alarm(
            self,
            "QuietAccounts",
            notice=Notice.CONDITION,
            metric=cloudwatch.Metric(
                namespace=metrics_namespace(env),
                metric_name=metric_names.QUIET_ACCOUNTS,
                dimensions_map={"service": "sweeper"},
                period=period,
                statistic="Maximum",
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            missing=cloudwatch.TreatMissingData.IGNORE,
            description=f"A Meta source account that normally sends (deliveries in {silence.active_slots} of "
            f"{silence.slots} slots of {silence.slot_seconds:g} s) has sent nothing for {silence.quiet_seconds:g} s: "
            "its subscription disabled or removed while others send. The sweeper's line `source accounts quiet` "
            "names it. See docs/RUNBOOK.md#quiet-accounts.",
        )


class Ticks(Construct):
    """A schedule putting tick envelopes on a lane, stamped with the event's id and time."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment, lane: Lane, queue: sqs.Queue) -> None:
        super().__init__(scope, construct_id)
        assert lane.tick is not None
        tick = lane.tick
        self.rule = schedule_rule(self, "Schedule", tick.period_seconds, f"lanes-{env.name}: {tick.kind} ticks")
        envelope = {
            "id": f"tick-{events.EventField.from_path('$.id')}",
            "lane": lane.name,
            "tenant": tick.tenant,
            "kind": tick.kind,
            "source": "internal",
            "created_at": events.EventField.time,
            "payload": {"scheduled_for": events.EventField.time},
        }
        self.rule.add_target(targets.SqsQueue(queue, message=events.RuleTargetInput.from_object(envelope)))
