"""The busiest counts come from the functions' own lines: a metric filter per count on the consumer's
and the door's log groups, each a pattern the local runtime can play (local_aws/log_filters.py)."""

from __future__ import annotations

import pytest

from local_aws.log_filters import MetricFilter
from pipeline import metric_filters
from stacks.runtime_env import metrics_namespace

pytestmark = pytest.mark.xdist_group("synth")


def _filters_on(synthesized, function_logical_prefix: str) -> dict[str, dict]:
    [function] = [
        f for logical_id, f in synthesized.resources("AWS::Lambda::Function").items()
        if logical_id.startswith(function_logical_prefix)
    ]  # fmt: skip
    group = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    found = {}
    for resource in synthesized.resources("AWS::Logs::MetricFilter").values():
        props = resource["Properties"]
        if props["LogGroupName"] == {"Ref": group}:
            [transformation] = props["MetricTransformations"]
            found[transformation["MetricName"]] = props
    return found


def _expected(metrics, namespace: str) -> dict[str, dict]:
    return {
        m.metric: {
            "FilterPattern": m.pattern,
            "MetricTransformations": [
                {
                    "MetricNamespace": namespace,
                    "MetricName": m.metric,
                    "MetricValue": "1",
                    "Unit": "Count",
                    "Dimensions": [{"Key": k, "Value": v} for k, v in m.dimensions],
                }
            ],
        }
        for m in metrics
    }


def test_each_consumer_and_the_door_count_their_outcome_lines(synthesized):
    namespace = metrics_namespace(synthesized.env)
    for lane in synthesized.env.lanes:
        found = _filters_on(synthesized, f"{lane.name.capitalize()}LaneConsumer")
        assert {name: {k: p[k] for k in ("FilterPattern", "MetricTransformations")} for name, p in found.items()} == (
            _expected(metric_filters.CONSUMER, namespace)
        )
    door = _filters_on(synthesized, "IngressWebhook")
    assert {name: {k: p[k] for k in ("FilterPattern", "MetricTransformations")} for name, p in door.items()} == (
        _expected(metric_filters.DOOR, namespace)
    )


def test_the_local_runtime_can_play_every_filter_the_stack_writes(synthesized):
    for resource in synthesized.resources("AWS::Logs::MetricFilter").values():
        [played] = MetricFilter.from_properties(resource["Properties"])
        assert len(played.dimensions) <= 3  # CloudWatch's limit for a metric filter
