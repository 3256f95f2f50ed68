"""When a dependency fails: nothing accepted is lost, and the webhook is never answered 503."""

from __future__ import annotations

import json
import logging

import boto3

from pipeline import schema
from pipeline.domain.envelope import Envelope
from pipeline.domain.webhook import delivery as webhook
from pipeline.domain.webhook import routing
from pipeline.handlers import ingress
from tests.support.aws import REGION, AwsCalls, handler_clients, http_api_event
from tests.unit.ingress.conftest import PATH, encode, post, whatsapp_message


def test_log_write_failure_answers_500_so_meta_retries_and_nothing_is_queued(door, aws_calls, inspect, metrics):
    # Given DynamoDB refuses the write
    aws_calls.fail("dynamodb.PutItem")

    # When a delivery arrives
    response = door(post(encode(whatsapp_message())), None)

    # Then Meta is told to retry (5xx, not 503) and no message exists without its row
    assert response["statusCode"] == 500
    assert inspect.messages("messages") == []
    assert ("WebhookFailed", {"Reason": "log_write_failed"}) in metrics()


def test_throttled_log_write_is_also_a_500(door, aws_calls):
    aws_calls.fail("dynamodb.PutItem", code="ProvisionedThroughputExceededException", status=400)

    assert door(post(encode(whatsapp_message())), None)["statusCode"] == 500


def test_enqueue_failure_after_the_write_answers_200_and_leaves_the_row_for_the_sweeper(
    door, aws_calls, inspect, metrics
):
    # Given SQS refuses the send
    aws_calls.fail("sqs.SendMessage")
    raw = encode(whatsapp_message())

    # When a delivery arrives
    response = door(post(raw), None)

    # Then Meta gets 200 (the row is the obligation), and the row is put in the pending index,
    # dated from its arrival, with everything needed to replay it
    assert response["statusCode"] == 200
    row = inspect.row(webhook.log_id(raw))
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert row[schema.PENDING_SHARD]["S"] == schema.pending_shard(webhook.log_id(raw))
    assert float(row[schema.PENDING_SINCE]["N"]) == float(row["received_at"]["N"])
    assert row["lane"]["S"] == "messages"
    assert inspect.body(webhook.log_id(raw)) == raw
    assert inspect.messages("messages") == []
    assert ("EnqueueFailed", {"Lane": "messages"}) in metrics()


def test_a_redelivery_after_a_failed_enqueue_sends_it_after_all(door, aws_calls, inspect):
    raw = encode(whatsapp_message())
    aws_calls.fail("sqs.SendMessage")
    door(post(raw), None)
    aws_calls.heal("sqs.SendMessage")

    assert door(post(raw), None)["statusCode"] == 200

    assert len(inspect.messages("messages")) == 1
    assert len(inspect.rows()) == 1


def test_a_failed_send_that_cannot_be_noted_on_the_row_is_a_500_and_the_retry_sends_it(
    door, aws_calls, inspect, metrics
):
    # Given SQS refuses the send, and DynamoDB then refuses the update that would note it
    raw = encode(whatsapp_message("twice unlucky"))
    aws_calls.fail("sqs.SendMessage")
    aws_calls.fail("dynamodb.UpdateItem")

    # When the delivery arrives
    response = door(post(raw), None)

    # Then Meta is told to retry: neither the queue nor the sweeper would ever see this row
    assert response["statusCode"] == 500
    row = inspect.row(webhook.log_id(raw))
    assert row["status"]["S"] == schema.RowStatus.QUEUED
    assert schema.PENDING_SHARD not in row
    assert ("WebhookFailed", {"Reason": "enqueue_unnoted"}) in metrics()

    # And Meta's retry, once SQS is back, puts the one row's message on its lane
    aws_calls.heal("sqs.SendMessage")
    aws_calls.heal("dynamodb.UpdateItem")
    assert door(post(raw), None)["statusCode"] == 200
    [message] = inspect.messages("messages")
    assert Envelope.from_json(message["Body"]).id == webhook.log_id(raw)
    assert len(inspect.rows()) == 1


def test_a_failed_send_costs_the_write_the_send_and_one_update(door, aws_calls):
    door(post(encode(whatsapp_message("warm"))), None)
    aws_calls.reset()
    aws_calls.fail("sqs.SendMessage")

    door(post(encode(whatsapp_message("unsent"))), None)

    assert aws_calls.calls == ["dynamodb.PutItem", "sqs.SendMessage", "dynamodb.UpdateItem"]


def _with_secret(ingress_environ, secret: dict | str) -> dict:
    """The door's own secret (the one its role may read) holding `secret` instead."""
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(
        SecretId=ingress_environ["META_SECRET_ARN"],
        SecretString=secret if isinstance(secret, str) else json.dumps(secret),
    )
    return ingress_environ


def test_an_empty_app_secret_is_a_500_and_a_critical_log_never_a_503(
    ingress_environ, clients, clock, inspect, log_records, metrics
):
    # Given the secret has no app secret yet (as the stack first creates it)
    environ = _with_secret(ingress_environ, {"app_secret": "", "previous_app_secret": "", "verify_token": "t"})
    door = ingress.create_handler(environ, clients=clients, clock=clock)

    # When a delivery and a handshake arrive
    post_response = door(post(encode(whatsapp_message()), secret="anything"), None)
    handshake = {"hub.mode": "subscribe", "hub.verify_token": "t", "hub.challenge": "1"}
    get_response = door(http_api_event("GET", PATH, query=handshake), None)

    # Then both are 500, loudly, and nothing is stored
    assert (post_response["statusCode"], get_response["statusCode"]) == (500, 500)
    assert any(r.levelno == logging.CRITICAL for r in log_records)
    assert ("WebhookFailed", {"Reason": "misconfigured"}) in metrics()
    assert inspect.rows() == []


def test_a_secret_that_is_not_json_is_misconfiguration(ingress_environ, clients, clock, log_records):
    door = ingress.create_handler(_with_secret(ingress_environ, "oops"), clients=clients, clock=clock)

    assert door(post(b"{}"), None)["statusCode"] == 500
    assert any(r.levelno == logging.CRITICAL for r in log_records)


def test_an_unreadable_secret_is_a_500_and_is_read_again_after_a_pause(door, aws_calls, clock, metrics):
    # Given Secrets Manager is failing when the instance first needs the secret
    aws_calls.fail("secretsmanager.GetSecretValue", code="ThrottlingException", status=400)
    raw = encode(whatsapp_message())
    assert door(post(raw), None)["statusCode"] == 500
    assert ("WebhookFailed", {"Reason": "secrets_unavailable"}) in metrics()

    # When it recovers, the instance does not hammer it: within the pause it still answers 500
    aws_calls.heal("secretsmanager.GetSecretValue")
    aws_calls.reset()
    assert door(post(raw), None)["statusCode"] == 500
    assert "secretsmanager.GetSecretValue" not in aws_calls.calls

    # Then after the pause it reads the secret and takes the delivery
    clock.advance(10)
    assert door(post(raw), None)["statusCode"] == 200


def test_the_secrets_are_read_once_per_instance(door, aws_calls):
    for text in ("one", "two", "three"):
        door(post(encode(whatsapp_message(text))), None)

    # The Meta secret and the sender key, each on the first delivery
    assert aws_calls.calls.count("secretsmanager.GetSecretValue") == 2
    assert aws_calls.calls[:2] == ["secretsmanager.GetSecretValue"] * 2


def test_an_unexpected_error_is_a_500_not_a_crash(ingress_environ, clients, clock, monkeypatch, metrics):
    door = ingress.create_handler(ingress_environ, clients=clients, clock=clock)
    monkeypatch.setattr(routing, "route", lambda payload: 1 / 0)

    response = door(post(encode(whatsapp_message())), None)

    assert response["statusCode"] == 500
    assert ("WebhookFailed", {"Reason": "internal"}) in metrics()


def test_a_fresh_instance_makes_no_aws_call_until_its_first_request(ingress_environ, deployed):
    made = handler_clients(ingress_environ)
    calls = AwsCalls().watch(made.dynamodb, made.sqs, made.secretsmanager)

    ingress.create_handler(ingress_environ, clients=made)

    assert calls.calls == []
