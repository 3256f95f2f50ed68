"""The settle reserve prices re-sends by their bytes as well as their count: ten large bodies are
more SendMessageBatch calls than ten small ones."""

from __future__ import annotations

from pipeline.domain.consumer import settle_reserve


def test_ten_small_re_sends_are_one_call_and_ten_of_200_kib_are_ten():
    assert settle_reserve.settle_calls(resends=10, visibility_changes=0, releases=0, resend_bytes=10 * 2048) == 2
    # at most one 200 KiB body fits a 256 KiB batch: ten calls, priced at the bound of 16
    big = settle_reserve.settle_calls(resends=10, visibility_changes=0, releases=0, resend_bytes=10 * 200 * 1024)
    assert big == 16 + 1
