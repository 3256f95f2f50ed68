"""The runtime's metric store (local_aws/metrics.py): per-second statistics for the recent
minutes the alarms read, totals for the whole run."""

from __future__ import annotations

from local_aws import metrics
from local_aws.metrics import MetricsStore

NS, NAME = "Lanes", "RecordsDone"


def test_totals_cover_the_whole_run_while_old_seconds_are_dropped():
    # Given a metric recorded now and again long after the store's window
    store = MetricsStore()
    start = 1_000_000.0
    later = start + metrics._KEEP_SECONDS + 60
    store.put(NS, NAME, {"Lane": "messages"}, 5, timestamp=start)
    store.put(NS, NAME, {"Lane": "ai"}, 2, timestamp=start)
    store.put(NS, NAME, {"Lane": "messages"}, 3, timestamp=later)
    # Then the old second is gone from the statistics
    assert store.statistic(NS, NAME, {"Lane": "messages"}, "Sum", start, start + 1) is None
    assert store.statistic(NS, NAME, {"Lane": "messages"}, "Sum", later, later + 1) == 3
    # And the totals still count everything recorded
    assert store.total(NS, NAME, {"Lane": "messages"}) == 8
    assert store.total_matching(NS, NAME, {}) == 10
    assert store.total_matching(NS, NAME, {"Lane": "ai"}) == 2


def test_a_store_told_its_readers_look_back_keeps_no_more():
    # Given a store whose slowest reader (an alarm of 12 periods of 10 s) looks back 130 s
    store = MetricsStore()
    store.keep_for(130)
    start = 1_000_000.0
    store.put(NS, NAME, {"Lane": "messages"}, 1, timestamp=start)
    store.put(NS, NAME, {"Lane": "messages"}, 2, timestamp=start + 130)
    # When a datapoint comes past that look-back
    store.put(NS, NAME, {"Lane": "messages"}, 4, timestamp=start + 131)
    # Then the second it left behind is gone and the ones within it stay
    assert store.statistic(NS, NAME, {"Lane": "messages"}, "Sum", start, start + 1) is None
    assert store.statistic(NS, NAME, {"Lane": "messages"}, "Sum", start + 130, start + 132) == 6
    assert store.total(NS, NAME, {"Lane": "messages"}) == 7
