"""Metrics CloudWatch Logs counts from the functions' own lines (metric filters), so the busiest
counts cost no line of their own.

Every record the consumer settles gets one outcome line, and every delivery the door enqueues one
line too: on-call searches them and the tenant rankings read them. A `Records` count emitted
beside each as an embedded-metric document would be a second line, about 250 bytes, for the same
fact. So these counts are taken from those lines by metric filters on the functions' log groups
(stacks/constructs/function.py), with the same names and dimensions the documents had. Rare counts
(failures by reason, refused signatures, an invocation out of time) stay embedded documents: each
is a line that would not otherwise be written, and an alarm reads them.

The patterns are CloudWatch Logs filter patterns over JSON lines. The local runtime plays them on
each function's output as CloudWatch would (local_aws/log_filters.py evaluates them); a field a
dimension names must be on every matching line.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline import metric_names

SERVICE = "service"
"""The dimension Powertools puts on every metric, from the line's `service` field."""


@dataclass(frozen=True)
class LineMetric:
    metric: str
    pattern: str
    dimensions: tuple[tuple[str, str], ...]
    """(dimension name, "$.field"): at most three, as a metric filter allows."""


CONSUMER = (
    # Every outcome line, and an observe-mode budget's would_defer line; nothing else carries `outcome`.
    LineMetric(
        metric_names.RECORDS,
        "{ $.outcome = * }",
        ((metric_names.LANE, "$.lane"), (metric_names.OUTCOME, "$.outcome"), (SERVICE, "$.service")),
    ),
    LineMetric(
        metric_names.RETRIED_BY_CLASS,
        '{ $.outcome = "retried" }',
        ((metric_names.LANE, "$.lane"), (metric_names.ERROR_CLASS, "$.error_class"), (SERVICE, "$.service")),
    ),
    LineMetric(
        metric_names.ABANDONED,
        '{ $.outcome = "dead_lettered" }',
        ((metric_names.LANE, "$.lane"), (SERVICE, "$.service")),
    ),
    # What became of a reply sent through Meta: the line of the record that settled it says so.
    LineMetric(
        metric_names.REPLIES_SENT,
        '{ $.detail.reply = "sent" }',
        ((metric_names.LANE, "$.lane"), (SERVICE, "$.service")),
    ),
    LineMetric(
        metric_names.REPLIES_UNANSWERED,
        '{ $.detail.reply = "unanswered" }',
        ((metric_names.LANE, "$.lane"), (SERVICE, "$.service")),
    ),
)

ENQUEUED_MESSAGE = "delivery enqueued"

DOOR = (
    LineMetric(
        metric_names.WEBHOOK_ENQUEUED,
        f'{{ $.message = "{ENQUEUED_MESSAGE}" }}',
        ((metric_names.LANE, "$.lane"), (SERVICE, "$.service")),
    ),
    # The same lines without the lane: one series the quiet-webhooks alarm can watch for silence
    # (an alarm reads one metric; summing the lanes' would need metric math over every lane).
    LineMetric(
        metric_names.WEBHOOK_ENQUEUED_TOTAL,
        f'{{ $.message = "{ENQUEUED_MESSAGE}" }}',
        ((SERVICE, "$.service"),),
    ),
)
