"""The live view of `lanectl local` (ops/console/console.py) shows, per lane, how long quiet
tenants wait and how many tenants are noisy, and names the noisy ones. The runtime it reads is a
stand-in holding only what the view reads; the figures come through the real metrics store and
queue sample types the runtime fills every second."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from local_aws.fairness import NoisyGroup
from local_aws.mappings import MappingState, MappingStats
from local_aws.metrics import MetricsStore
from local_aws.on_call import OnCallInbox, Page
from local_aws.queue_metrics import QueueSample
from ops.console.console import inbox_line, render
from ops.console.live_view import view
from stacks.config.environments import ENVIRONMENTS


@dataclass
class _Player:
    stats: MappingStats = field(default_factory=MappingStats)

    def state(self) -> MappingState:
        return MappingState(enabled=True, batch_size=10, window_seconds=1.0, max_concurrency=3, report_failures=True)


@dataclass
class _Lane:
    name: str
    queue_name: str
    dlq_name: str
    player: _Player = field(default_factory=_Player)
    alarms: list[Any] = field(default_factory=list)


@dataclass
class _Alarms:
    alarms: list[Any] = field(default_factory=list)


@dataclass
class _Runtime:
    lanes: dict[str, _Lane]
    metrics: MetricsStore = field(default_factory=MetricsStore)
    queue_samples: dict[str, QueueSample] = field(default_factory=dict)
    env: Any = ENVIRONMENTS["local"]
    started_at: float = field(default_factory=time.time)
    api_url: str = "http://127.0.0.1:8787"
    aws_endpoint: str | None = None
    events: list[str] = field(default_factory=list)
    alarms: _Alarms = field(default_factory=_Alarms)
    inbox: OnCallInbox = field(default_factory=OnCallInbox)


def _engagement_flooded() -> _Runtime:
    """The engagement lane with one noisy page and quiet pages waiting 3.5 s; the messages lane with
    no noisy tenant."""
    runtime = _Runtime(
        lanes={
            "messages": _Lane("messages", "lanes-messages", "lanes-messages-dlq"),
            "engagement": _Lane("engagement", "lanes-engagement", "lanes-engagement-dlq"),
        }
    )
    flood = NoisyGroup("page-flood", visible=84, in_flight=18)
    runtime.queue_samples["lanes-engagement"] = QueueSample(
        "lanes-engagement", 86, 20, 0, 4.8, fair=True, noisy_groups=1, oldest_quiet_age_seconds=3.5, noisy=(flood,)
    )
    for metric, value in (
        ("ApproximateNumberOfMessagesVisible", 86),
        ("ApproximateAgeOfOldestMessage", 4.8),
        ("ApproximateAgeOfOldestMessageInQuietGroups", 3.5),
        ("ApproximateNumberOfNoisyGroups", 1),
    ):
        runtime.metrics.put("AWS/SQS", metric, {"QueueName": "lanes-engagement"}, value)
    return runtime


def test_the_live_view_names_noisy_tenants_and_shows_the_quiet_tenants_wait():
    # Given the engagement lane with one noisy page and quiet pages waiting 3.5 s, the messages
    # lane with no noisy tenant
    runtime = _engagement_flooded()
    # When the view is drawn
    lines = render(runtime).splitlines()  # type: ignore[arg-type]
    # Then the engagement row shows the quiet tenants' age and one noisy tenant, and a line names it
    header = lines[1].split()
    engagement = dict(zip(header, next(line for line in lines if line.startswith("engagement")).split(), strict=False))
    messages = dict(zip(header, next(line for line in lines if line.startswith("messages")).split(), strict=False))
    assert (engagement["oldest"], engagement["quiet"], engagement["noisy"]) == ("4.8s", "3.5s", "1")
    assert messages["noisy"] == "0"
    assert "noisy tenants: engagement page-flood (84 queued, 18 in flight)" in lines


def test_on_a_terminal_the_live_view_draws_the_same_rows():
    # Given the same lanes
    runtime = _engagement_flooded()
    # When the terminal view is drawn (by rich)
    out = io.StringIO()
    Console(file=out, width=220, color_system=None).print(view(runtime))  # type: ignore[arg-type]
    lines = [[w for w in line.split() if w not in {"│", "┃"}] for line in out.getvalue().splitlines()]
    # Then its lane rows carry the same figures as the plain view's, and the noisy tenant is named
    header = next(words for words in lines if words[:1] == ["lane"])
    engagement = dict(zip(header, next(words for words in lines if words[:1] == ["engagement"]), strict=False))
    assert (engagement["oldest"], engagement["quiet"], engagement["noisy"], engagement["alarms"]) == (
        "4.8s",
        "3.5s",
        "1",
        "ok",
    )
    assert "noisy tenants: engagement page-flood (84 queued, 18 in flight)" in out.getvalue()


def test_the_views_say_what_reached_the_on_call_inbox():
    # Given a runtime whose inbox has been paged once, and one that has not
    quiet = _engagement_flooded()
    paged = _engagement_flooded()
    paged.inbox.pages.append(
        Page(
            at=time.mktime((2026, 12, 2, 9, 30, 5, 0, 0, -1)),
            endpoint="on-call@localhost",
            subject="ALARM: lanes-local-AiLaneDeadLetters",
            alarm="lanes-local-AiLaneDeadLetters",
            state="ALARM",
            reason="1 of 1 period(s) breaching",
        )
    )

    # Then the line both views print says so
    assert inbox_line(quiet) == "on-call inbox: no pages"
    assert inbox_line(paged) == "on-call inbox: 1 page(s), last 09:30:05 ALARM: lanes-local-AiLaneDeadLetters"
