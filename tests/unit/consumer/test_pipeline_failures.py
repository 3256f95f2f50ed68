"""The record pipeline's failures on in-memory ports: what is dead-lettered and with which
attributes, what is retried and how it backs off, and when retries run out. Fast, so most changes
to the consumer's outcomes (domain/settling.py) are caught here before any test that needs moto runs."""

from __future__ import annotations

import random

import pytest

from pipeline import schema
from pipeline.domain import retry
from pipeline.domain.effects import Table
from pipeline.domain.errors import PermanentError, TransientError
from pipeline.domain.work import TaskResult
from pipeline.metric_names import Outcome
from tests.unit.consumer.memory import LANE, NOW
from tests.unit.consumer.pipeline_harness import Pipeline, lane_settings


def raising(exc: BaseException):
    def task(ctx):
        raise exc

    return task


def test_a_row_that_does_not_exist_is_dead_lettered_with_its_reason():
    p = Pipeline()
    envelope = p.job("job-gone")
    p.store.items.clear()
    record = p.record(envelope)
    assert p.run([record]) == []
    ((body, attributes),) = p.queue.dead
    assert body == record["body"]
    assert attributes["reason"] == "row_missing"
    assert attributes["error"] == "jobs row job-gone does not exist"
    assert attributes["attempts"] == "1"
    assert p.outcomes() == [Outcome.DEAD_LETTERED]


def test_a_permanent_failure_is_dead_lettered_with_every_attribute_and_the_row_marked_failed():
    # Given a job whose task rejects its input, received for the second time
    p = Pipeline(task=raising(PermanentError("bad_input", "x" * 300)))
    record = p.record(p.job("job-bad", tenant="acme", kind="resize"), receives=2)
    # When it runs
    assert p.run([record]) == []
    # Then the original body is parked with why, and the row says failed with the same reason
    ((body, attributes),) = p.queue.dead
    assert body == record["body"]
    assert attributes == {
        "reason": "bad_input",
        "error_class": "PermanentError",
        "error": "x" * 256,
        "attempts": "2",
        "lane": LANE,
        "tenant": "acme",
        "kind": "resize",
        "id": "job-bad",
        "source_message_id": record["messageId"],
    }
    row = p.store.row(Table.JOBS, "job-bad")
    assert row["status"] == schema.RowStatus.FAILED
    assert row["last_error"].startswith("bad_input: xxx")
    assert row["error_class"] == "PermanentError"
    assert (row["attempts"], row["finished_at"], row["updated_at"]) == (2, NOW, NOW)
    assert [w.key[schema.PK] for w in p.committer.landed] == ["queued#messages#acme"]
    outcome = p.outcome(record["messageId"])
    assert (outcome.outcome, outcome.attempt, outcome.error.reason) == (Outcome.DEAD_LETTERED, 2, "bad_input")


def test_a_malformed_body_is_dead_lettered_unchanged_with_no_envelope_fields():
    p = Pipeline()
    record = p.record("not json", receives=3)
    assert p.run([record]) == []
    ((body, attributes),) = p.queue.dead
    assert body == "not json"
    assert attributes["reason"] == "malformed"
    assert attributes["error_class"] == "MalformedEnvelope"
    assert attributes["attempts"] == "3"
    assert (attributes["tenant"], attributes["kind"], attributes["id"]) == ("", "", "")


def test_a_record_for_another_lane_is_dead_lettered_and_not_run():
    calls = []
    p = Pipeline(task=lambda ctx: calls.append(1) or TaskResult())
    other = Pipeline(lane=lane_settings(name="bulk"))
    record = p.record(other.job("job-b"))
    assert p.run([record]) == []
    assert calls == []
    assert p.queue.dead[0][1]["reason"] == "malformed"
    assert "bulk" in p.queue.dead[0][1]["error"]


def test_a_transient_failure_backs_off_through_visibility_and_notes_the_row():
    # Given a job whose dependency answers 503, on its second receive
    p = Pipeline(task=raising(TransientError("503 from vendor")))
    record = p.record(p.job("job-t"), receives=2)
    # When it runs
    failures = p.run([record])
    # Then it is reported back, comes again after the jittered backoff of attempt 2, and the row
    # stays queued with its attempts and last error
    assert failures == [record["messageId"]]
    expected = retry.backoff(2, 2.0, 300.0, random.Random(7))
    assert p.queue.visibility == [(record["receiptHandle"], expected.seconds)]
    outcome = p.outcome(record["messageId"])
    assert outcome.outcome == Outcome.RETRIED
    assert outcome.detail == {"backoff_ceiling": 4.0}
    assert outcome.attempt == 2
    row = p.store.row(Table.JOBS, "job-t")
    assert row["status"] == schema.RowStatus.QUEUED
    assert (row["attempts"], row["last_error"], row["updated_at"]) == (2, "transient: 503 from vendor", NOW)
    assert p.queue.dead == []


def test_a_retry_note_that_cannot_be_written_still_retries_the_record():
    p = Pipeline(task=raising(TransientError("503")))
    p.committer.note_error = ConnectionError("dynamodb down")
    record = p.record(p.job("job-n"))
    assert p.run([record]) == [record["messageId"]]
    assert p.outcomes() == [Outcome.RETRIED]
    assert p.observer.problems == [("retry not noted on the row", p.committer.note_error, {"id": "job-n"})]


def test_internal_work_that_fails_transiently_is_retried_without_a_marker():
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.tick("tick-t"))
    assert p.run([record]) == [record["messageId"]]
    assert p.committer.notes == []
    assert p.store.marker("tick-t") is None


@pytest.mark.parametrize(("receives", "outcome"), [(4, Outcome.RETRIED), (5, Outcome.DEAD_LETTERED)])
def test_a_transient_failure_is_dead_lettered_as_retries_exhausted_on_the_last_attempt(receives, outcome):
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.job("job-x"), receives=receives)
    p.run([record])
    assert p.outcomes() == [outcome]
    if outcome == Outcome.DEAD_LETTERED:
        assert p.queue.dead[0][1]["reason"] == "retries_exhausted"
        assert p.queue.dead[0][1]["error_class"] == "TransientError"
        assert p.status("job-x") == schema.RowStatus.FAILED


def test_attempts_carried_by_a_resent_copy_count_towards_the_last_attempt():
    p = Pipeline(task=raising(TransientError("503")))
    record = p.record(p.job("job-c", attempt=3), receives=2)
    p.run([record])
    assert p.outcomes() == [Outcome.DEAD_LETTERED]
    assert p.queue.dead[0][1]["attempts"] == "5"


def test_a_failed_row_redriven_from_the_dlq_is_finished_done():
    p = Pipeline()
    record = p.record(p.job("job-r", status=schema.RowStatus.FAILED))
    p.run([record])
    assert p.status("job-r") == schema.RowStatus.DONE
    assert [w.table for w in p.committer.landed] == [Table.DATA]  # no second queued decrement


def test_the_backoff_ceiling_on_the_records_line_is_rounded_to_milliseconds():
    p = Pipeline(task=raising(TransientError("503")), lane=lane_settings(retry_base_seconds=0.12345))
    record = p.record(p.job("job-t"))
    p.run([record])
    assert p.outcome(record["messageId"]).detail == {"backoff_ceiling": 0.123}


def test_a_commit_refused_for_good_dead_letters_the_record_and_marks_its_row_failed():
    # Given a job whose writes DynamoDB refuses for good (an item too large: the same writes fail
    # the same way every time)
    p = Pipeline()

    def refuse() -> None:
        raise PermanentError("item_too_large", "the task's item is over 400 KB")

    p.committer.before_commit = refuse
    record = p.record(p.job("job-v"))

    # When it runs
    assert p.run([record]) == []

    # Then it goes to the DLQ, nothing it wrote landed (only the job's leaving its tenant's queued
    # count), and its row says failed
    assert p.outcome(record["messageId"]).outcome == Outcome.DEAD_LETTERED
    assert [w.key for w in p.committer.landed] == [{schema.PK: "queued#messages#acme"}]
    assert p.status("job-v") == schema.RowStatus.FAILED


def test_an_exception_built_from_payload_values_leaves_no_payload_text_anywhere():
    # Given a task whose bug raises an exception quoting what it read from the payload
    p = Pipeline(task=raising(ValueError("no contact for +44 7700 900123 (Jane Doe): 'call me back'")))
    record = p.record(p.job("job-quoted", tenant="acme", kind="resize"), receives=2)

    # When it is dead-lettered
    assert p.run([record]) == []

    # Then the reason, the class and where it was raised are kept, and none of the payload's text:
    # not in the DLQ's attributes, the row's last error, nor the outcome the log line is made of
    ((_, attributes),) = p.queue.dead
    row = p.store.row(Table.JOBS, "job-quoted")
    outcome = p.outcome(record["messageId"])
    for text in (attributes["error"], row["last_error"], outcome.error.message):
        assert "7700" not in text
        assert "Jane" not in text
        assert "call me" not in text
        assert "ValueError raised in" in text
        assert "test_pipeline_failures.py" in text
    assert (attributes["reason"], attributes["error_class"]) == ("bad_input", "ValueError")
