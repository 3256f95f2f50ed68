"""A reply over its channel's limit is cut by the stated rule (domain/reply_length.py), never sent over."""

from __future__ import annotations

import pytest

from pipeline.domain.reply_length import ELLIPSIS, LIMITS, fit, units


@pytest.mark.parametrize(("channel", "limit"), [("whatsapp", 4096), ("messenger", 2000), ("instagram", 2000)])
def test_a_reply_over_the_limit_is_cut_at_a_word_within_it(channel, limit):
    # Given a reply of whole words longer than the channel allows
    text = "answer " * (limit // 3)
    # When it is fitted
    cut = fit(text, channel)
    # Then it fits, ends at a word with the ellipsis, and is the reply's beginning
    assert units(cut) <= limit
    assert cut.endswith("answer" + ELLIPSIS)
    assert text.startswith(cut[: -len(ELLIPSIS)])
    assert units(cut) > limit - 10


def test_a_reply_that_fits_is_left_as_it_is():
    text = "x" * LIMITS["messenger"]
    assert fit(text, "messenger") == text


def test_characters_outside_the_basic_plane_count_twice():
    # Given 1,500 emoji on Messenger: 1,500 characters, 3,000 UTF-16 code units
    text = "\U0001f600" * 1500
    cut = fit(text, "messenger")
    # Then what is kept fits 2,000 code units, and no emoji is split in half
    assert units(cut) <= 2000
    assert cut[:-1] == "\U0001f600" * ((2000 - 1) // 2)


def test_a_reply_with_no_blank_near_the_limit_is_cut_hard():
    cut = fit("y" * 5000, "whatsapp")
    assert cut == "y" * 4095 + ELLIPSIS
