"""Alarms on what customers feel, every dead-letter queue watched, a dashboard and tenant rankings."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ops.cost.environment_cost import environment_cost
from pipeline import metric_names
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from stacks.constructs.lane import dlq_logical_id, queue_logical_id
from stacks.runtime_env import PERIOD_METADATA, lane_id

pytestmark = pytest.mark.xdist_group("synth")


def _alarms(synthesized) -> list[dict]:
    return [a["Properties"] for a in synthesized.resources("AWS::CloudWatch::Alarm").values()]


def _on_queue(alarms: list[dict], metric: str, queue_id: str) -> dict:
    (alarm,) = [
        a
        for a in alarms
        if a.get("MetricName") == metric
        and a.get("Dimensions") == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    return alarm


def _topic_id(synthesized) -> str:
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    return topic_id


def test_every_alarm_pages_the_on_call_topic_and_links_its_runbook_section(synthesized):
    # What each alarm notifies, and when, is tests/infra/test_alarm_rules.py's
    topic = {"Ref": _topic_id(synthesized)}
    alarms = _alarms(synthesized)
    assert alarms
    for alarm in alarms:
        assert [topic] in (alarm.get("AlarmActions"), alarm.get("InsufficientDataActions"))
        assert "RUNBOOK" in alarm["AlarmDescription"]


def test_each_lane_alarms_on_age_dead_letters_errors_and_throttles(synthesized):
    alarms = _alarms(synthesized)
    period = synthesized.env.alarms.period_seconds
    for lane in synthesized.env.lanes:
        age = _on_queue(alarms, "ApproximateAgeOfOldestMessage", queue_logical_id(lane.name))
        assert (age["Threshold"], age["ComparisonOperator"], age["Statistic"], age["Period"]) == (
            lane.policy.objective_seconds,
            "GreaterThanThreshold",
            "Maximum",
            period,
        )
        dlq = _on_queue(alarms, "ApproximateNumberOfMessagesVisible", dlq_logical_id(lane.name))
        assert (dlq["Threshold"], dlq["ComparisonOperator"], dlq["EvaluationPeriods"]) == (
            1,
            "GreaterThanOrEqualToThreshold",
            1,
        )
    # Per lane's consumer; the lane probe's errors alarm aside (tests/infra/test_self_pause.py), and
    # the doors' (tests/infra/test_door_alarms.py)
    consumers = [f"{lane_id(lane.name)}Lane" for lane in synthesized.env.lanes]
    lambda_alarms = [
        a
        for a in alarms
        if a.get("Namespace") == "AWS/Lambda" and any(c in json.dumps(a["Dimensions"]) for c in consumers)
    ]
    throttles = [a for a in lambda_alarms if a["MetricName"] == "Throttles"]
    errors = [a for a in lambda_alarms if a["MetricName"] == "Errors"]
    assert len(throttles) == len(errors) == len(synthesized.env.lanes)
    assert all(a["Threshold"] == 0 and a["ComparisonOperator"] == "GreaterThanThreshold" for a in throttles)


def test_each_lane_alarms_on_the_wait_of_its_quiet_tenants(synthesized):
    # Fair queues leave a noisy tenant's flood out of this age: it pages when tenants who are not
    # flooding wait past the lane's objective, in SQS's own namespace and dimension.
    alarms = _alarms(synthesized)
    for lane in synthesized.env.lanes:
        quiet = _on_queue(alarms, "ApproximateAgeOfOldestMessageInQuietGroups", queue_logical_id(lane.name))
        assert (quiet["Namespace"], quiet["Statistic"], quiet["Period"]) == (
            "AWS/SQS",
            "Maximum",
            synthesized.env.alarms.period_seconds,
        )
        assert (quiet["Threshold"], quiet["ComparisonOperator"]) == (
            lane.policy.objective_seconds,
            "GreaterThanThreshold",
        )
        assert "RUNBOOK.md#quiet-tenants-waiting" in quiet["AlarmDescription"]


def test_every_runbook_link_of_an_alarm_names_a_section_of_the_runbook(synthesized):
    runbook = (Path(__file__).resolve().parents[2] / "docs" / "RUNBOOK.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", runbook, flags=re.MULTILINE)
    }
    linked = {
        link
        for alarm in _alarms(synthesized)
        for link in re.findall(r"RUNBOOK\.md#([a-z0-9-]+)", alarm["AlarmDescription"])
    }
    assert linked
    assert linked <= anchors, sorted(linked - anchors)


def test_each_lane_alarms_on_a_consumer_invocation_out_of_time(synthesized):
    # Each one returned a whole batch to SQS with a receive spent on every record: the first pages.
    namespace = f"Lanes/{synthesized.env.name}"
    out_of_time = [a for a in _alarms(synthesized) if a.get("MetricName") == metric_names.OUT_OF_TIME]
    assert sorted(d["Value"] for a in out_of_time for d in a["Dimensions"] if d["Name"] == metric_names.LANE) == sorted(
        lane.name for lane in synthesized.env.lanes
    )
    for alarm in out_of_time:
        (lane,) = [d["Value"] for d in alarm["Dimensions"] if d["Name"] == metric_names.LANE]
        assert {"Name": "service", "Value": f"consumer-{lane}"} in alarm["Dimensions"]
        assert (alarm["Namespace"], alarm["Statistic"], alarm["Threshold"]) == (namespace, "Sum", 1)
        assert (alarm["ComparisonOperator"], alarm["EvaluationPeriods"]) == ("GreaterThanOrEqualToThreshold", 1)
        assert "RUNBOOK.md#out-of-time" in alarm["AlarmDescription"]


def test_replies_meta_reported_failed_are_alarmed_on_the_lanes_that_apply_statuses(synthesized):
    # The series by Lane alone, not one of the by-Code series: every code counts toward the page
    env = synthesized.env
    failed = [a for a in _alarms(synthesized) if a.get("MetricName") == metric_names.REPLIES_FAILED]
    lanes = sorted(d["Value"] for a in failed for d in a["Dimensions"] if d["Name"] == metric_names.LANE)
    assert lanes == sorted(lane.name for lane in env.lanes if lane.policy.task == "messages")
    for alarm in failed:
        (lane,) = [d["Value"] for d in alarm["Dimensions"] if d["Name"] == metric_names.LANE]
        assert sorted(d["Name"] for d in alarm["Dimensions"]) == sorted([metric_names.LANE, "service"])
        assert {"Name": "service", "Value": f"consumer-{lane}"} in alarm["Dimensions"]
        assert (alarm["Statistic"], alarm["Threshold"], alarm["Period"]) == (
            "Sum",
            env.alarms.replies_failed_per_period,
            env.alarms.period_seconds,
        )
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert "RUNBOOK.md#failed-replies" in alarm["AlarmDescription"]


def test_the_planner_prices_every_alarm_the_stack_makes(synthesized):
    # What `lanectl plan` prices, at any traffic: the alarms are a fixed cost
    assert environment_cost(synthesized.env, 0.25).fixed.alarm_count == len(_alarms(synthesized))


def test_dead_letters_are_watched_by_depth_not_by_sends(synthesized):
    # NumberOfMessagesSent misses messages that SQS's redrive moves into the DLQ.
    assert not [a for a in _alarms(synthesized) if a.get("MetricName") == "NumberOfMessagesSent"]


def _sweep_seconds(synthesized) -> int:
    """How often the sweeper runs: on AWS, the rule's rate (EventBridge's smallest is a minute);
    locally, the period the runtime plays from the rule's metadata."""
    (rule,) = [
        r
        for r in synthesized.resources("AWS::Events::Rule").values()
        if "sweep for lost" in r["Properties"]["Description"]
    ]
    played = int(rule["Metadata"][PERIOD_METADATA])
    assert played == synthesized.env.sweeper.period_seconds
    if synthesized.env.name == "local":
        return played
    rate = re.fullmatch(r"rate\((\d+) minutes?\)", rule["Properties"]["ScheduleExpression"])
    assert rate, rule["Properties"]["ScheduleExpression"]
    return int(rate.group(1)) * 60


def _on_sweeper_age(synthesized, source: str, lane: str | None = None) -> list[dict]:
    """The alarms on the age the sweeper reports for `source` (for `lane`, or for the source as a whole)."""
    found = [
        a
        for a in _alarms(synthesized)
        if a.get("MetricName") == metric_names.OLDEST_UNPROCESSED_AGE
        and {"Name": metric_names.SOURCE, "Value": source} in a["Dimensions"]
        and [d["Value"] for d in a["Dimensions"] if d["Name"] == metric_names.LANE] == ([lane] if lane else [])
    ]
    for alarm in found:
        assert alarm["Namespace"] == f"Lanes/{synthesized.env.name}"
        assert {"Name": "service", "Value": "sweeper"} in alarm["Dimensions"]
    return found


def _sweeper_alarms(synthesized, source: str) -> tuple[dict | None, dict]:
    """The source-wide age alarm (None for jobs: their ages are alarmed per lane) and the silence
    alarm on what the sweeper reports for `source`."""
    on_age = _on_sweeper_age(synthesized, source)
    ages = [a for a in on_age if a["Statistic"] == "Maximum"]
    (silent,) = [a for a in on_age if a["Statistic"] == "SampleCount"]
    assert len(ages) <= 1
    return (ages[0] if ages else None), silent


def _cloudwatch_period(seconds: int) -> bool:
    return seconds in (10, 30) or seconds % 60 == 0


def _healthy_sweeper_never_fires(synthesized, age: dict) -> None:
    sweep = _sweep_seconds(synthesized)
    # Every period of a healthy sweeper holds a report: no period is shorter than a sweep
    assert age["Period"] >= sweep
    assert _cloudwatch_period(age["Period"])
    # And a period without one (a late sweep, the minutes after a deploy) neither pages nor clears
    assert age["TreatMissingData"] == "ignore"
    assert age["EvaluationPeriods"] == synthesized.env.alarms.evaluation_periods


def test_the_sweepers_webhook_age_alarm_never_fires_on_a_healthy_sweeper(synthesized):
    # Given a sweeper reporting the webhook source's age on every run, 0 when nothing is pending
    age, _ = _sweeper_alarms(synthesized, "webhook")
    assert age is not None
    _healthy_sweeper_never_fires(synthesized, age)
    # While an age past the threshold still pages, as soon as the sweeps report it
    assert (age["Threshold"], age["ComparisonOperator"]) == (
        synthesized.env.alarms.webhook_age_seconds,
        "GreaterThanThreshold",
    )
    assert "RUNBOOK.md#unprocessed-webhooks" in age["AlarmDescription"]


@pytest.mark.parametrize("source", ["webhook", "job"])
def test_each_lanes_pending_rows_are_alarmed_against_that_lanes_objective(synthesized, source):
    # Given the lanes a source's rows can wait on (any lane for a job, the door's lanes for a delivery)
    lanes = [lane for lane in synthesized.env.lanes if source == "job" or lane.name in WEBHOOK_LANES]
    assert lanes
    for lane in lanes:
        # Then each has its own age alarm, at its own objective: a bulk import's normal half hour
        # does not hold an alarm in ALARM that a lost message should page through. Past the time
        # the sweeper takes to send a lost row again (grace, then a sweep), so a send failure it
        # recovers as designed pages nobody
        (age,) = _on_sweeper_age(synthesized, source, lane.name)
        _healthy_sweeper_never_fires(synthesized, age)
        sweeper = synthesized.env.sweeper
        assert (age["Statistic"], age["Threshold"], age["ComparisonOperator"]) == (
            "Maximum",
            lane.policy.objective_seconds + sweeper.settings.grace_seconds + sweeper.period_seconds,
            "GreaterThanThreshold",
        )
        assert f"RUNBOOK.md#unprocessed-{source}s-on-a-lane" in age["AlarmDescription"]
    # And no age alarm for jobs holds every lane to one threshold
    assert _sweeper_alarms(synthesized, "job")[0] is None


@pytest.mark.parametrize("source", ["webhook", "job"])
def test_a_sweeper_that_stopped_pages_but_a_deploy_or_one_missed_sweep_does_not(synthesized, source):
    sweep = _sweep_seconds(synthesized)
    _, silent = _sweeper_alarms(synthesized, source)
    period = silent["Period"]
    needed = silent.get("DatapointsToAlarm", silent["EvaluationPeriods"])
    # Given an alarm on how many reports each period holds, where a period with one never breaches
    # and periods without one are missing data, not breaching
    assert (silent["Threshold"], silent["ComparisonOperator"]) == (1, "LessThanThreshold")
    assert silent["TreatMissingData"] == "missing"
    assert period >= sweep
    assert _cloudwatch_period(period)
    # Then it pages when no period of its range holds a report (INSUFFICIENT_DATA), never before
    # the first report: a new alarm is created in that state, and no action runs until it changes
    assert silent["InsufficientDataActions"] == [{"Ref": _topic_id(synthesized)}]
    assert "AlarmActions" not in silent
    assert needed == silent["EvaluationPeriods"]
    # A missed sweep, half a sweep late on top, leaves a gap of 2.5 sweeps between reports: at
    # most ceil(gap / period) - 1 whole periods without one
    assert math.ceil(2.5 * sweep / period) - 1 < needed
    # And a sweeper that stopped pages within ten minutes of its last report
    assert needed * period <= 600
    assert "RUNBOOK.md#sweeper-silent" in silent["AlarmDescription"]


def test_abandoned_rows_and_shed_jobs_are_alarmed(synthesized):
    alarms = _alarms(synthesized)
    abandoned = [a for a in alarms if a.get("MetricName") == metric_names.ABANDONED]
    assert sorted(d["Value"] for a in abandoned for d in a["Dimensions"] if d["Name"] == metric_names.SOURCE) == [
        "job",
        "webhook",
    ]
    # And rows whose retention ran out while they were pending, each one
    expired = [a for a in alarms if a.get("MetricName") == metric_names.EXPIRED_UNPROCESSED]
    assert sorted(d["Value"] for a in expired for d in a["Dimensions"] if d["Name"] == metric_names.SOURCE) == [
        "job",
        "webhook",
    ]
    for alarm in expired:
        assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
            "Sum",
            1,
            "GreaterThanOrEqualToThreshold",
        )
        assert "RUNBOOK.md#expired-unprocessed" in alarm["AlarmDescription"]
    # And deliveries the door logged but could not route to any lane
    (unparseable,) = [a for a in alarms if a.get("MetricName") == metric_names.WEBHOOK_UNPARSEABLE]
    assert {"Name": "service", "Value": "ingress"} in unparseable["Dimensions"]
    assert (unparseable["Statistic"], unparseable["Threshold"], unparseable["ComparisonOperator"]) == (
        "Sum",
        synthesized.env.alarms.unparseable_deliveries,
        "GreaterThanOrEqualToThreshold",
    )
    assert "RUNBOOK.md#unparseable-deliveries" in unparseable["AlarmDescription"]
    shed = [a for a in alarms if a.get("MetricName") == metric_names.JOB_SHED]
    assert len(shed) == len(synthesized.env.lanes)
    assert all(a["Threshold"] == synthesized.env.alarms.jobs_shed_threshold for a in shed)


def _own_alarm_arns(synthesized) -> dict:
    """The ARN pattern of the alarms this stack makes, as the template writes it."""
    stack = synthesized.stack.stack_name
    return {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":cloudwatch:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":alarm:{stack}-*",
            ],
        ]
    }


def test_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use_for_this_stacks_alarms_only(synthesized):
    (topic,) = synthesized.resources("AWS::SNS::Topic").values()
    key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = synthesized.resource(key_id)["Properties"]
    assert key["EnableKeyRotation"] is True
    (cloudwatch,) = [
        s for s in key["KeyPolicy"]["Statement"] if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert cloudwatch["Effect"] == "Allow"
    assert sorted(cloudwatch["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    # Only on behalf of this stack's own alarms (no confused deputy, not even another stack's alarm)
    assert cloudwatch["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": _own_alarm_arns(synthesized)},
    }


def test_cloudwatch_may_publish_to_the_on_call_topic_for_this_stacks_alarms_only(synthesized):
    # Given the topic's policy (the stack's only one on the topic)
    topic_id = _topic_id(synthesized)
    (policy,) = synthesized.resources("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    # Then CloudWatch is allowed to publish, on this stack's alarms' behalf only (EventBridge on
    # its rules' is tests/infra/test_alarm_rules.py's)
    (allowed,) = [
        s for s in statements if s["Effect"] == "Allow" and s["Principal"] != {"Service": "events.amazonaws.com"}
    ]
    assert allowed["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allowed["Action"] == "sns:Publish"
    assert allowed["Resource"] == {"Ref": topic_id}
    assert allowed["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": _own_alarm_arns(synthesized)},
    }
    # And publishing without TLS is still refused to everyone
    (denied,) = [s for s in statements if s["Effect"] == "Deny"]
    assert (denied["Principal"], denied["Action"]) == ("*", "sns:Publish")
    assert denied["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # And the pattern covers every alarm: none is named, so CloudFormation names each
    # <stack>-<logical id>-<suffix> (a name given here could fall outside it, and its pages be refused)
    assert all("AlarmName" not in alarm for alarm in _alarms(synthesized))


def test_dashboard_shows_every_lane(synthesized):
    (dashboard,) = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == f"lanes-{synthesized.env.name}"
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for lane in synthesized.env.lanes:
        assert f"{lane.name}: oldest message age" in body
        assert f"{lane.name}: records by outcome" in body
    # Fair queues: the quiet tenants' wait and how many tenants are noisy, beside the lane's age
    for metric in ("ApproximateAgeOfOldestMessageInQuietGroups", "ApproximateNumberOfNoisyGroups"):
        assert body.count(metric) == len(synthesized.env.lanes)


def test_contributor_insights_rank_tenants_by_work_and_by_deferrals(synthesized):
    rules = {
        r["Properties"]["RuleName"]: r["Properties"]
        for r in synthesized.resources("AWS::CloudWatch::InsightRule").values()
    }
    env = synthesized.env.name
    assert set(rules) == {f"lanes-{env}-top-tenants-by-work", f"lanes-{env}-top-tenants-by-deferrals"}
    deferrals = rules[f"lanes-{env}-top-tenants-by-deferrals"]
    body = json.dumps(deferrals["RuleBody"])
    assert "$.tenant" in body
    assert "deferred" in body
    assert deferrals["RuleState"] == "ENABLED"


def test_every_5xx_reason_of_the_doors_is_alarmed(synthesized):
    alarmed = {
        (a["MetricName"], next(d["Value"] for d in a["Dimensions"] if d["Name"] == metric_names.REASON))
        for a in _alarms(synthesized)
        if a.get("MetricName") in (metric_names.WEBHOOK_FAILED, metric_names.JOB_FAILED)
    }
    assert alarmed == {(metric_names.WEBHOOK_FAILED, r) for r in metric_names.WebhookFailure.ALL} | {
        (metric_names.JOB_FAILED, r) for r in metric_names.JobFailure.ALL
    }


def test_refused_signatures_are_alarmed_as_one_series(synthesized):
    # Every refusal (missing, malformed, mismatched) is counted under RejectedBy=signature too
    (alarm,) = [
        a
        for a in _alarms(synthesized)
        if a.get("MetricName") == metric_names.WEBHOOK_REJECTED
        and {"Name": metric_names.REJECTED_BY, "Value": metric_names.SIGNATURE} in a["Dimensions"]
    ]
    assert {"Name": "service", "Value": "ingress"} in alarm["Dimensions"]
    assert (alarm["Namespace"], alarm["Statistic"], alarm["Period"]) == (
        f"Lanes/{synthesized.env.name}",
        "Sum",
        synthesized.env.alarms.period_seconds,
    )
    assert alarm["Threshold"] == synthesized.env.alarms.rejected_signatures
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert "RUNBOOK.md#rejected-signatures" in alarm["AlarmDescription"]


def test_webhooks_gone_quiet_page_where_the_environment_expects_steady_traffic(synthesized):
    env = synthesized.env
    quiet = [a for a in _alarms(synthesized) if a.get("MetricName") == metric_names.WEBHOOK_ENQUEUED_TOTAL]
    if env.alarms.webhooks_quiet_seconds is None:
        assert quiet == []
        return
    (alarm,) = quiet
    # Every lane's enqueued lines as one series, and its absence for the quiet time is what pages
    # (no data at all, INSUFFICIENT_DATA), so a stack that has never had a delivery pages nobody
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "ingress"}]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 1, "LessThanThreshold")
    assert alarm["TreatMissingData"] == "missing"
    assert alarm["InsufficientDataActions"] == [{"Ref": _topic_id(synthesized)}]
    assert alarm["Period"] * alarm["EvaluationPeriods"] == env.alarms.webhooks_quiet_seconds
    assert "docs/RUNBOOK.md#webhooks-quiet" in alarm["AlarmDescription"]
    # The series exists: a metric filter on the door's log group counts every enqueued line, lane or not
    (counted,) = [
        f["Properties"]
        for f in synthesized.resources("AWS::Logs::MetricFilter").values()
        if f["Properties"]["MetricTransformations"][0]["MetricName"] == metric_names.WEBHOOK_ENQUEUED_TOTAL
    ]
    (transformation,) = counted["MetricTransformations"]
    assert transformation["Dimensions"] == [{"Key": "service", "Value": "$.service"}]
    assert counted["FilterPattern"] == '{ $.message = "delivery enqueued" }'


def test_prod_pages_after_half_an_hour_of_silence_and_dev_never():
    from stacks.config.environments import ENVIRONMENTS

    assert ENVIRONMENTS["prod"].alarms.webhooks_quiet_seconds == 1800
    assert ENVIRONMENTS["dev"].alarms.webhooks_quiet_seconds is None


@pytest.mark.parametrize("quiet", [0, -60, 90, 86460])
def test_a_quiet_time_that_is_not_whole_periods_within_a_day_is_refused(quiet):
    from stacks.config.environments import AlarmConfig

    with pytest.raises(ValueError, match="webhooks_quiet_seconds must be a multiple of period_seconds"):
        AlarmConfig(period_seconds=60, webhooks_quiet_seconds=quiet)
