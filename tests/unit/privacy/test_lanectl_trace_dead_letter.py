"""`lanectl trace` from what an operator sees in a DLQ: the SQS message id `lanectl dlq peek`
shows. The DLQ is received and every message released at once (ops/commands/dead_letter.py), the
dead letter's reason heads the trace, and an unknown id or lane is refused with nothing changed."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.support.aws import REGION
from tests.support.lanectl_stack import lane_outputs, publish, table_outputs

DLQ = "bulk"


@pytest.fixture
def dlq_stack(pipeline) -> dict[str, str]:
    """`lanes-dev` as lanectl finds it: tables and every lane's queue and DLQ of the moto pipeline."""
    return publish(table_outputs(pipeline) | lane_outputs(pipeline))


def _dead_lettered_job(pipeline) -> str:
    """A bulk job of a kind its task does not run: the consumer dead-letters it with the reason."""
    answer = pipeline.submit({"lane": "bulk", "kind": "import.nope", "tenant": "acme", "payload": {"page": 1}})
    job_id = json.loads(answer["body"])["id"]
    pipeline.drain(lanes=("bulk",))
    return job_id


def _visible(pipeline, lane: str) -> int:
    url = pipeline.deployed.resources.dlq_urls[lane]
    attributes = boto3.client("sqs", region_name=REGION).get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]), int(attributes["ApproximateNumberOfMessagesNotVisible"])


def test_a_dead_letters_message_id_traces_its_job_with_the_dlqs_reason(pipeline, dlq_stack, lanectl):
    # Given a job the bulk consumer dead-lettered, and its message id as `lanectl dlq peek` shows it
    job_id = _dead_lettered_job(pipeline)
    code, peeked, _ = lanectl("dlq", "peek", DLQ, "--env", "dev", "--output", "json")
    assert code == 0, peeked
    [letter] = json.loads(peeked)["messages"]

    # When on-call traces that message id
    code, out, err = lanectl("trace", letter["message_id"], "--env", "dev")

    # Then the dead letter's reason heads the trace of its job, with what the lookup cost
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"dead letter {letter['message_id']} on the bulk DLQ, dead-lettered ")
    assert lines[1] == "  reason       unknown_kind (error_class PermanentError, attempts 1)"
    assert f"job {job_id}" in lines
    assert "  status       dead-lettered: its message is in the lane's DLQ (lanectl dlq peek LANE)" in out
    assert "sqs ChangeMessageVisibilityBatch 1, sqs ReceiveMessage 1" in out
    # and the message is back, visible, on its DLQ
    assert _visible(pipeline, DLQ) == (1, 0)


def test_json_carries_the_dead_letters_attributes_and_lane_narrows_the_search(pipeline, dlq_stack, lanectl):
    job_id = _dead_lettered_job(pipeline)
    [letter] = json.loads(lanectl("dlq", "peek", DLQ, "--env", "dev", "--output", "json")[1])["messages"]

    code, out, _ = lanectl("trace", letter["message_id"], "--lane", DLQ, "--env", "dev", "--output", "json")

    assert code == 0
    traced = json.loads(out)
    assert traced["id"] == job_id
    assert traced["found_by"] == letter["message_id"]
    dead = traced["dead_letter"]
    assert (dead["lane"], dead["id"], dead["reason"], dead["error_class"]) == (
        DLQ,
        job_id,
        "unknown_kind",
        "PermanentError",
    )
    assert traced["reads"]["sqs ReceiveMessage"] == 1


def test_an_unknown_message_id_is_refused_and_every_dead_letter_is_left_visible(pipeline, dlq_stack, lanectl):
    _dead_lettered_job(pipeline)
    before = _visible(pipeline, DLQ)

    code, out, err = lanectl("trace", "0f8fad5b-d9cb-469f-a165-70867728950e", "--env", "dev")

    assert code == 2
    assert out == ""
    assert "no message 0f8fad5b-d9cb-469f-a165-70867728950e in any lane's dead-letter queue of lanes-dev" in err
    assert "looked at 1 message(s)" in err
    assert _visible(pipeline, DLQ) == before


def test_an_unknown_lane_is_refused_before_any_call(pipeline, dlq_stack, lanectl):
    code, _, err = lanectl("trace", "0f8fad5b-d9cb-469f-a165-70867728950e", "--lane", "nope", "--env", "dev")

    assert code == 2
    assert "unknown lane 'nope' in dev" in err


def test_lane_without_a_message_id_is_refused(pipeline, dlq_stack, lanectl):
    code, _, err = lanectl("trace", "job-" + "0" * 32, "--lane", DLQ, "--env", "dev")

    assert code == 2
    assert "--lane goes with a dead letter's SQS message id" in err


def test_a_dead_letter_on_another_lane_is_not_found_on_the_one_named(pipeline, dlq_stack, lanectl):
    _dead_lettered_job(pipeline)
    [letter] = json.loads(lanectl("dlq", "peek", DLQ, "--env", "dev", "--output", "json")[1])["messages"]

    code, _, err = lanectl("trace", letter["message_id"], "--lane", "messages", "--env", "dev")

    assert code == 2
    assert "in the messages dead-letter queue" in err
    assert _visible(pipeline, DLQ) == (1, 0)


def test_a_dead_letter_that_is_no_envelope_shows_what_it_is_and_names_nothing_more(pipeline, dlq_stack, lanectl):
    # Given a body on the messages DLQ that no consumer wrote (SQS moved it after max receives)
    url = pipeline.deployed.resources.dlq_urls["messages"]
    message_id = boto3.client("sqs", region_name=REGION).send_message(QueueUrl=url, MessageBody="not json")["MessageId"]

    code, out, _ = lanectl("trace", message_id, "--env", "dev")

    assert code == 0
    assert f"dead letter {message_id} on the messages DLQ" in out
    assert "  (moved by SQS after max receives without success; no reason was attached)" in out
    assert "its body is not an envelope, so it names no delivery or job: 'not json'" in out
    assert _visible(pipeline, "messages") == (1, 0)
