"""The record pipeline's failures on in-memory ports: what is dead-lettered and with which
attributes, what is retried and how it backs off, and when retries run out. Fast, so most changes
to the consumer's outcomes (domain/consumer/settling.py) are caught here before any test that needs moto runs."""

from __future__ import annotations

import random

import pytest

from pipeline import schema
from pipeline.domain.consumer import retry
from pipeline.domain.consumer.work import TaskResult
from pipeline.domain.effects import Table
from pipeline.domain.errors import PermanentError, TransientError
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


DAY = 86400


@pytest.mark.parametrize("source", ["webhook", "job"])
def test_a_dead_lettered_row_is_kept_as_long_as_its_dead_letter(source):
    # Given a row due to expire in 7 days, whose dead letter the DLQ keeps 14
    from pipeline.settings.lane_policy import DLQ_RETENTION_SECONDS

    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    make = p.webhook if source == "webhook" else p.job
    record = p.record(make("row-1", **{schema.TTL: int(NOW) + 7 * DAY}))
    # When it is dead-lettered
    p.run([record])
    assert p.outcomes() == [Outcome.DEAD_LETTERED]
    # Then its row outlives the dead letter, so a redrive on day 13 still finds it
    row = p.store.row(Table.WEBHOOK_LOG if source == "webhook" else Table.JOBS, "row-1")
    assert row["status"] == schema.RowStatus.FAILED
    assert row[schema.TTL] >= NOW + DLQ_RETENTION_SECONDS


def test_a_dead_lettered_row_never_has_its_expiry_shortened():
    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    record = p.record(p.job("row-1", **{schema.TTL: int(NOW) + 30 * DAY}))
    p.run([record])
    assert p.store.row(Table.JOBS, "row-1")[schema.TTL] == int(NOW) + 30 * DAY


def test_a_dead_lettered_webhook_keeps_its_body_parts_as_long_as_its_row():
    from pipeline.domain.webhook.body import part_id
    from pipeline.settings.lane_policy import DLQ_RETENTION_SECONDS

    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    record = p.record(p.webhook("row-1", body_parts=3, **{schema.TTL: int(NOW) + 7 * DAY}))
    p.run([record])
    extended = [w for w in p.committer.landed if w.key.get(schema.ID, "").startswith("row-1#part")]
    assert [w.key[schema.ID] for w in extended] == [part_id("row-1", 1), part_id("row-1", 2)]
    for write in extended:
        assert write.values[":ttl"] >= NOW + DLQ_RETENTION_SECONDS
        # An update, never a put: a part TTL already deleted is not brought back empty.
        assert "attribute_exists" in (write.condition or "")


class AwsError(Exception):
    """An error shaped as botocore's ClientError is (the domain reads only its response)."""

    def __init__(self, code: str, status: int) -> None:
        super().__init__(f"An error occurred ({code})")
        self.response = {"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}}


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 400), ("InternalServerError", 500), ("ServiceUnavailable", 503), ("AccessDenied", 403)],
)
def test_aws_side_unavailability_on_the_last_attempt_is_deferred_without_spending_an_attempt(code, status):
    # Given a record on its last attempt whose task meets AWS throttling or unavailability (a blip
    # longer than the lane's retries span)
    p = Pipeline(task=raising(AwsError(code, status)))
    record = p.record(p.job("job-1"), receives=5)
    # When it runs
    p.run([record])
    # Then it is re-sent to wait the blip out, not dead-lettered, and the copy spends no attempt
    assert p.outcomes() == [Outcome.DEFERRED]
    assert p.queue.dead == []
    [(resent, delay)] = p.queue.resent
    assert delay > 0
    assert resent.attempt == 4  # the four failed receives before this one, not five
    assert resent.deferrals == 1
    assert p.status("job-1") == schema.RowStatus.QUEUED


def test_aws_unavailability_is_waited_out_only_so_long_then_retried_as_usual():
    # Given a record that has already been deferred as often as the bound allows
    from pipeline.domain.consumer.settling import AWS_OUTAGE_DEFERRALS

    p = Pipeline(task=raising(AwsError("ThrottlingException", 400)))
    record = p.record(p.job("job-1", deferrals=AWS_OUTAGE_DEFERRALS), receives=5)
    p.run([record])
    # Then the last attempt is spent as any transient failure's is
    assert p.outcomes() == [Outcome.DEAD_LETTERED]
    assert p.queue.dead[0][1]["reason"] == "retries_exhausted"


def test_a_task_that_fails_transiently_on_its_own_still_spends_attempts():
    p = Pipeline(task=raising(TransientError("vendor down")))
    p.run([p.record(p.job("job-1"), receives=5)])
    assert p.outcomes() == [Outcome.DEAD_LETTERED]


def test_a_dead_lettered_webhook_row_whose_mark_fails_is_left_where_the_sweeper_looks():
    # Given a plain webhook row (its send succeeded, so it is in no index) whose task fails for good
    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    record = p.record(p.webhook("wh-1"))
    # and DynamoDB refuses the mark that would say it failed
    p.committer.error = AwsError("InternalServerError", 500)
    # When it is dead-lettered
    p.run([record])
    # Then the row is in the pending index, so the sweeper sees it still pending
    assert p.outcomes() == [Outcome.DEAD_LETTERED]
    row = p.store.row(Table.WEBHOOK_LOG, "wh-1")
    assert row["status"] == schema.RowStatus.QUEUED
    assert row[schema.PENDING_SHARD] == schema.pending_shard("wh-1")
    assert schema.PENDING_SINCE in row


def test_a_webhook_row_that_cannot_be_put_where_the_sweeper_looks_is_not_dead_lettered_yet():
    # Given DynamoDB refusing every write, the index entry included
    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    record = p.record(p.webhook("wh-1"), receives=2)
    p.committer.error = p.committer.note_error = AwsError("InternalServerError", 500)
    # When the record fails for good
    p.run([record])
    # Then it stays in its lane (retried, bounded by its receives) rather than parked where no
    # sweep would ever look for its row
    assert p.outcomes() == [Outcome.RETRIED]
    assert p.queue.dead == []


def test_a_dead_lettered_webhook_row_marked_failed_leaves_the_index():
    p = Pipeline(task=raising(PermanentError("bad_input", "no")))
    p.run([p.record(p.webhook("wh-1"))])
    row = p.store.row(Table.WEBHOOK_LOG, "wh-1")
    assert row["status"] == schema.RowStatus.FAILED
    assert schema.PENDING_SHARD not in row


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
