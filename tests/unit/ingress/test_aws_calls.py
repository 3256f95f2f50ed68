"""The door's cost in AWS calls, counted on the clients themselves (botocore hooks)."""

from __future__ import annotations

import base64
import os

from pipeline.domain.webhook import delivery as webhook
from tests.unit.ingress.conftest import encode, page_comment, post, whatsapp_message


def _warm(door, aws_calls) -> None:
    door(post(encode(whatsapp_message("warm-up"))), None)
    aws_calls.reset()


def test_a_new_delivery_costs_exactly_one_write_and_one_send(door, aws_calls):
    # Given a warm instance (its secret already read)
    _warm(door, aws_calls)

    # When a new delivery arrives
    door(post(encode(whatsapp_message("new"))), None)

    # Then the hot path is the conditional write and the send, nothing else
    assert aws_calls.calls == ["dynamodb.PutItem", "sqs.SendMessage"]


def test_the_first_delivery_of_an_instance_also_reads_the_secret_and_notes_its_account(door, aws_calls):
    door(post(encode(page_comment())), None)

    # The account's last-seen stamp comes after the send, never before it
    assert aws_calls.calls == [
        "secretsmanager.GetSecretValue",
        "dynamodb.PutItem",
        "sqs.SendMessage",
        "dynamodb.UpdateItem",
    ]


def test_an_account_is_noted_at_most_once_per_interval_per_instance(door, aws_calls, clock, ingress_environ):
    from pipeline import settings

    interval = settings.account_silence(ingress_environ).note_seconds
    # Given a warm instance that has noted the account
    _warm(door, aws_calls)
    # When more of its deliveries arrive within the interval, and one after it
    door(post(encode(whatsapp_message("one"))), None)
    door(post(encode(whatsapp_message("two"))), None)
    clock.advance(interval)
    door(post(encode(whatsapp_message("three"))), None)
    # Then only the one after the interval costs a third call
    assert aws_calls.calls == [
        "dynamodb.PutItem",
        "sqs.SendMessage",
        "dynamodb.PutItem",
        "sqs.SendMessage",
        "dynamodb.PutItem",
        "sqs.SendMessage",
        "dynamodb.UpdateItem",
    ]


def test_a_delivery_naming_another_account_notes_that_one(door, aws_calls):
    _warm(door, aws_calls)

    door(post(encode(whatsapp_message("other", waba="909090"))), None)

    assert aws_calls.calls == ["dynamodb.PutItem", "sqs.SendMessage", "dynamodb.UpdateItem"]


def test_the_first_delivery_naming_a_person_also_reads_the_sender_key_once(door, aws_calls):
    door(post(encode(whatsapp_message("first"))), None)
    door(post(encode(whatsapp_message("second"))), None)

    # The Meta secret, then the sender key; the hash itself is computed in the function
    assert aws_calls.calls == [
        "secretsmanager.GetSecretValue",
        "secretsmanager.GetSecretValue",
        "dynamodb.PutItem",
        "sqs.SendMessage",
        "dynamodb.UpdateItem",
        "dynamodb.PutItem",
        "sqs.SendMessage",
    ]


def test_a_pending_redelivery_costs_the_failed_write_and_a_send_but_no_read(door, aws_calls):
    raw = encode(whatsapp_message("again"))
    door(post(raw), None)
    aws_calls.reset()

    door(post(raw), None)

    assert aws_calls.calls == ["dynamodb.PutItem", "sqs.SendMessage"]


def test_a_finished_redelivery_costs_one_call(door, aws_calls, inspect):
    raw = encode(whatsapp_message("done"))
    door(post(raw), None)
    inspect.mark_done(webhook.log_id(raw))
    aws_calls.reset()

    door(post(raw), None)

    assert aws_calls.calls == ["dynamodb.PutItem"]


def test_an_unparseable_delivery_costs_one_call(door, aws_calls):
    _warm(door, aws_calls)

    door(post(b"{broken"), None)

    assert aws_calls.calls == ["dynamodb.PutItem"]


def test_a_body_stored_in_parts_still_costs_two_calls(door, aws_calls):
    _warm(door, aws_calls)

    door(post(encode(whatsapp_message(base64.b64encode(os.urandom(600_000)).decode()))), None)

    assert aws_calls.calls == ["dynamodb.TransactWriteItems", "sqs.SendMessage"]


def test_refused_requests_cost_nothing_once_warm(door, aws_calls):
    _warm(door, aws_calls)

    door(post(encode(whatsapp_message()), signature=None), None)
    door(post(encode(whatsapp_message()), secret="not-ours"), None)
    door(post(b"{" + b" " * (3 * 1024 * 1024) + b"}"), None)

    assert aws_calls.calls == []
