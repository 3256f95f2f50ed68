"""The view of a running pipeline: per lane, what is waiting, how long quiet tenants wait and which
tenants are noisy (SQS fair queues), what is running, what happened to the work, and which alarms
are firing; then a summary at the end. This is the plain text (logs, pipes, `--no-live`, the
summary); on a terminal live_view.py draws the same rows with rich."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from local_aws.alarms import ALARM, OK
from local_aws.fairness import NoisyGroup
from local_aws.runtime import LocalRuntime
from local_aws.wiring import LaneView
from pipeline import metric_names
from pipeline.metric_names import Outcome
from stacks.runtime_env import lane_id, metrics_namespace

OUTCOME_COLUMNS = (
    ("done", (Outcome.DONE,)),
    ("dup", (Outcome.DUPLICATE, Outcome.SUPERSEDED)),
    ("deferred", (Outcome.DEFERRED,)),
    ("expired", (Outcome.EXPIRED,)),
    ("retried", (Outcome.RETRIED,)),
    ("dead", (Outcome.DEAD_LETTERED,)),
)


@dataclass(frozen=True)
class LaneRow:
    lane: str
    visible: int
    in_flight: int
    delayed: int
    oldest_age: float
    quiet_age: float
    """Age of the oldest message of the tenants that are not noisy: what a well-behaved one waits."""
    noisy_groups: int
    noisy: tuple[NoisyGroup, ...]
    dlq: int
    running: int
    budget: int
    outcomes: dict[str, int]
    alarms_firing: list[str]


def _latest(runtime: LocalRuntime, metric: str, queue: str) -> float:
    value = runtime.metrics.latest("AWS/SQS", metric, {"QueueName": queue})
    return 0.0 if value is None else value


def lane_row(runtime: LocalRuntime, lane: LaneView) -> LaneRow:
    namespace = metrics_namespace(runtime.env)
    outcomes = {
        column: int(
            sum(
                runtime.metrics.total_matching(
                    namespace, metric_names.RECORDS, {metric_names.LANE: lane.name, metric_names.OUTCOME: outcome}
                )
                for outcome in names
            )
        )
        for column, names in OUTCOME_COLUMNS
    }
    state = lane.player.state()
    sample = runtime.queue_samples.get(lane.queue_name)
    return LaneRow(
        lane=lane.name,
        visible=int(_latest(runtime, "ApproximateNumberOfMessagesVisible", lane.queue_name)),
        in_flight=int(_latest(runtime, "ApproximateNumberOfMessagesNotVisible", lane.queue_name)),
        delayed=int(_latest(runtime, "ApproximateNumberOfMessagesDelayed", lane.queue_name)),
        oldest_age=_latest(runtime, "ApproximateAgeOfOldestMessage", lane.queue_name),
        quiet_age=_latest(runtime, "ApproximateAgeOfOldestMessageInQuietGroups", lane.queue_name),
        noisy_groups=int(_latest(runtime, "ApproximateNumberOfNoisyGroups", lane.queue_name)),
        noisy=sample.noisy if sample else (),
        dlq=int(_latest(runtime, "ApproximateNumberOfMessagesVisible", lane.dlq_name)),
        running=lane.player.stats.in_flight,
        budget=state.max_concurrency if state.enabled else 0,
        outcomes=outcomes,
        alarms_firing=[
            a.logical_id.removeprefix(f"{lane_id(lane.name)}Lane")[:-8] for a in lane.alarms if a.state == ALARM
        ],
    )


def render(runtime: LocalRuntime) -> str:
    rows = [lane_row(runtime, lane) for lane in runtime.lanes.values()]
    uptime = time.time() - runtime.started_at
    header = (
        f"lanes-{runtime.env.name}  up {uptime:5.0f}s   API {runtime.api_url}   AWS {runtime.aws_endpoint}\n"
        f"{'lane':<11}{'queued':>7}{'inflight':>9}{'delayed':>8}{'oldest':>8}{'quiet':>7}{'noisy':>6}{'dlq':>5}"
        f"{'running':>10}" + "".join(f"{name:>9}" for name, _ in OUTCOME_COLUMNS) + "  alarms"
    )
    lines = [header]
    for row in rows:
        lines.append(
            f"{row.lane:<11}{row.visible:>7}{row.in_flight:>9}{row.delayed:>8}{row.oldest_age:>7.1f}s"
            f"{row.quiet_age:>6.1f}s{row.noisy_groups:>6}{row.dlq:>5}"
            f"{f'{row.running}/{row.budget}':>10}"
            + "".join(f"{row.outcomes[name]:>9}" for name, _ in OUTCOME_COLUMNS)
            + ("  " + ",".join(row.alarms_firing) if row.alarms_firing else "  ok")
        )
    noisy = [f"{row.lane} {noisy_text(row.noisy)}" for row in rows if row.noisy]
    lines.append(f"noisy tenants: {'; '.join(noisy) if noisy else 'none'}")
    assert runtime.alarms is not None
    firing = [a.logical_id for a in runtime.alarms.alarms if a.state == ALARM]
    lines.append(f"alarms firing: {', '.join(firing) if firing else 'none'}")
    lines.extend(f"  {event}" for event in runtime.events[-6:])
    return "\n".join(lines)


def noisy_text(groups: tuple[NoisyGroup, ...]) -> str:
    return ", ".join(f"{g.name} ({g.visible} queued, {g.in_flight} in flight)" for g in groups)


def top_contributors(runtime: LocalRuntime, rule_body: dict[str, Any], limit: int = 5) -> list[tuple[str, int]]:
    """A Contributor Insights rule from the template, evaluated over the captured logs."""
    keys = [k.removeprefix("$.") for k in rule_body["Contribution"]["Keys"]]
    filters = rule_body["Contribution"].get("Filters", [])
    counts: dict[str, int] = {}
    for function in list(runtime.capture.recent):
        for line in runtime.capture.lines(function):
            if all(_matches(line, f) for f in filters):
                contributor = " / ".join(str(line.get(k, "")) for k in keys)
                counts[contributor] = counts.get(contributor, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])[:limit]


def _matches(line: dict[str, Any], rule_filter: dict[str, Any]) -> bool:
    value = line.get(rule_filter["Match"].removeprefix("$."))
    if "In" in rule_filter:
        return value in rule_filter["In"]
    if "EqualTo" in rule_filter:
        return value == rule_filter["EqualTo"]
    if "IsPresent" in rule_filter:
        return (value is not None) == bool(rule_filter["IsPresent"])
    return False


def inbox_line(runtime: LocalRuntime) -> str:
    pages = runtime.inbox.pages
    if not pages:
        return "on-call inbox: no pages"
    last = pages[-1]
    return (
        f"on-call inbox: {len(pages)} page(s), last {time.strftime('%H:%M:%S', time.localtime(last.at))} {last.subject}"
    )


def summary(runtime: LocalRuntime) -> str:
    import json

    lines = ["", "Summary", render(runtime).split("\n", 1)[1].rsplit("\nalarms firing", 1)[0]]
    assert runtime.alarms is not None
    changes = [
        (at, alarm.logical_id, old, new)
        for alarm in runtime.alarms.alarms
        for at, old, new, _ in alarm.history
        if old != "INSUFFICIENT_DATA" or new != OK
    ]
    lines.append("alarm changes:" if changes else "alarm changes: none")
    for at, name, old, new in sorted(changes):
        lines.append(f"  {time.strftime('%H:%M:%S', time.localtime(at))} {name}: {old} -> {new}")
    lines.append(inbox_line(runtime))
    assert runtime.deployment is not None
    for resource in runtime.deployment.resources("AWS::CloudWatch::InsightRule").values():
        properties = resource["Properties"]
        body = properties["RuleBody"]
        rule = json.loads(body) if isinstance(body, str) else runtime.deployment.resolve(body)
        if isinstance(rule, str):
            rule = json.loads(rule)
        top = top_contributors(runtime, rule)
        lines.append(f"{properties['RuleName']}: " + (", ".join(f"{k} ({v})" for k, v in top) if top else "no entries"))
    peak = {
        lane.name: f"{lane.player.stats.peak_in_flight}/{lane.player.state().max_concurrency}"
        for lane in runtime.lanes.values()
    }
    lines.append("peak concurrent batches per lane (budget): " + ", ".join(f"{k} {v}" for k, v in peak.items()))
    if runtime.errors:
        lines.append(f"runtime errors: {len(runtime.errors)} (first: {runtime.errors[0]})")
    return "\n".join(lines)
