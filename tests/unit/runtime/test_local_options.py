"""`lanectl local --webhook-throttle RATE/BURST` and `--model-latency MS`: read as API Gateway and the
model fake take them, and a bad value refused with what to give instead."""

from __future__ import annotations

import argparse

import pytest

from ops.commands import local


def test_a_rate_and_burst_are_read_as_api_gateway_takes_them():
    parser = argparse.ArgumentParser()
    local.add_arguments(parser)

    assert parser.parse_args(["--webhook-throttle", "12.5/30"]).webhook_throttle == (12.5, 30)
    assert parser.parse_args([]).webhook_throttle is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10", "expected RATE/BURST such as 10/20"),
        ("fast/20", "expected RATE/BURST such as 10/20"),
        ("10/2.5", "expected RATE/BURST such as 10/20"),
        ("0/20", "the rate must be above 0 and the burst at least 1"),
        ("10/0", "the rate must be above 0 and the burst at least 1"),
    ],
)
def test_a_throttle_that_is_not_a_positive_rate_and_burst_is_refused_saying_what_to_give(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        local.throttle(text)


def test_the_models_latency_is_read_in_milliseconds():
    parser = argparse.ArgumentParser()
    local.add_arguments(parser)

    assert parser.parse_args(["--model-latency", "1000"]).model_latency == 1000.0
    assert parser.parse_args([]).model_latency is None


@pytest.mark.parametrize(
    ("text", "message"),
    [("1s", "expected milliseconds such as 1000"), ("-5", "must be 0 to 60000 ms"), ("60001", "must be 0 to 60000 ms")],
)
def test_a_model_latency_out_of_range_is_refused_saying_what_to_give(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        local.model_latency(text)
