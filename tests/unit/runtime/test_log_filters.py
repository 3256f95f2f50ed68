"""The local runtime plays CloudWatch Logs metric filters on the functions' lines: the JSON patterns
the stack writes, matched and counted as CloudWatch would, and anything else refused by name."""

from __future__ import annotations

import pytest

from local_aws.log_filters import LineCounts, MetricFilter, UnsupportedPattern, parsed_line
from pipeline import metric_filters


def _filter(pattern: str, dimensions=(("Lane", "$.lane"),)) -> MetricFilter:
    [found] = MetricFilter.from_properties(
        {
            "FilterPattern": pattern,
            "MetricTransformations": [
                {
                    "MetricNamespace": "Lanes/local",
                    "MetricName": "Records",
                    "MetricValue": "1",
                    "Dimensions": [{"Key": k, "Value": v} for k, v in dimensions],
                }
            ],
        }
    )
    return found


@pytest.mark.parametrize(
    ("pattern", "line", "counted"),
    [
        ('{ $.outcome = "done" }', {"outcome": "done", "lane": "m"}, True),
        ('{ $.outcome = "done" }', {"outcome": "done!", "lane": "m"}, False),
        ('{ $.outcome != "done" }', {"outcome": "retried", "lane": "m"}, True),
        ("{ $.outcome = * }", {"outcome": "anything", "lane": "m"}, True),
        ("{ $.outcome = * }", {"lane": "m"}, False),
        ('{ $.detail.kind = "x" }', {"detail": {"kind": "x"}, "lane": "m"}, True),
        ("{ $.attempt = 2 }", {"attempt": 2, "lane": "m"}, True),
        ("{ $.attempt = 2 }", {"attempt": "2", "lane": "m"}, False),
        ('{ $.a = "1" && $.b = "2" }', {"a": "1", "b": "2", "lane": "m"}, True),
        ('{ $.a = "1" && $.b = "2" }', {"a": "1", "lane": "m"}, False),
        ('{ $.a = "1" || $.b = "2" }', {"b": "2", "lane": "m"}, True),
        ('{ ($.a = "1" || $.b = "2") && $.c = * }', {"b": "2", "lane": "m"}, False),
        ('{ ($.a = "1" || $.b = "2") && $.c = * }', {"b": "2", "c": 0, "lane": "m"}, True),
    ],
)
def test_a_json_pattern_counts_the_lines_cloudwatch_would(pattern, line, counted):
    assert (_filter(pattern).observe(line) is not None) is counted


def test_a_line_without_a_field_its_dimension_reads_is_not_counted():
    records = _filter("{ $.outcome = * }", (("Lane", "$.lane"), ("Outcome", "$.outcome")))
    assert records.observe({"outcome": "done", "lane": "messages"}) == {"Lane": "messages", "Outcome": "done"}
    assert records.observe({"outcome": "done"}) is None


@pytest.mark.parametrize(
    "pattern",
    ["ERROR", "[ip, user]", '{ $.a ~ "x" }', '{ $.a = "1" && $.b = "2" || $.c = "3" }', '{ $.a = "1"'],
)
def test_a_pattern_the_player_cannot_read_is_refused_naming_it(pattern):
    with pytest.raises(UnsupportedPattern, match=r"pattern|cannot read|mixed|expected"):
        _filter(pattern)


def test_only_a_json_object_line_is_read():
    assert parsed_line('{"outcome": "done"}') == {"outcome": "done"}
    assert parsed_line("START RequestId: 1") is None
    assert parsed_line("[1, 2]") is None
    assert parsed_line("{not json") is None


def test_each_functions_lines_are_counted_by_its_own_filters_only():
    # Given the consumer's filters on one function, and a door beside it with none
    put = []
    consumer = [MetricFilter.of(m, "Lanes/local") for m in metric_filters.CONSUMER]
    sink = LineCounts({"consumer-fn": consumer}, lambda *args: put.append(args)).sink
    line = '{"message":"record retried","service":"consumer-messages","lane":"messages","outcome":"retried",'
    line += '"error_class":"TransientError"}'

    # When each prints the same retried line
    sink("consumer-fn", line)
    sink("door-fn", line)

    # Then the consumer's line counts once as a record and once as a retry, and the door's not at all
    assert sorted((name, dimensions) for _, name, dimensions, _, _ in put) == [
        ("Records", {"Lane": "messages", "Outcome": "retried", "service": "consumer-messages"}),
        ("Retried", {"Lane": "messages", "ErrorClass": "TransientError", "service": "consumer-messages"}),
    ]
