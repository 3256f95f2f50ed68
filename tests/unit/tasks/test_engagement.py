"""engagement lane: comment triage within the shared model budget; a page's flood uses free slots."""

from __future__ import annotations

import pytest

from local_aws.converse_fake import label_for
from pipeline.domain.dependencies import budgets
from pipeline.domain.errors import PermanentError
from pipeline.tasks import engagement
from tests.unit.tasks.payloads import (
    PAGE,
    FakeContext,
    FakeTaskModel,
    FakeVendor,
    comment_at,
    comment_change,
    envelope,
    feed,
)


def test_a_comment_is_labelled_by_the_model_within_the_llm_budget(lane):
    # Given a new comment asking a question
    h = lane("engagement")
    h.send(h.webhook_row(feed(comment_change("c-1", "When do you open on Sunday?")), tenant=PAGE, lane="engagement"))
    # When the engagement consumer triages it
    response, _ = h.poll(h.handler())
    # Then it is labelled, and the shared llm slot it used has been given back
    assert response == {"batchItemFailures": []}
    assert h.data(*comment_at("c-1"))["label"] == "question"
    assert h.state("dependency#llm")[budgets.IN_USE] == 0


def test_a_flood_from_one_page_takes_every_free_slot_and_costs_no_bookkeeping(lane):
    # Given a batch of ten deliveries: eight from a page running a campaign, two from another page
    h = lane("engagement")
    for n in range(8):
        h.send(
            h.webhook_row(
                feed(comment_change(f"flood-{n}", f"win {n}"), page="page-flood"),
                tenant="page-flood",
                lane="engagement",
            )
        )
    for n in range(2):
        h.send(
            h.webhook_row(
                feed(comment_change(f"calm-{n}", "refund please"), page="page-calm"),
                tenant="page-calm",
                lane="engagement",
            )
        )
    vendor = FakeVendor()
    # When the consumer takes the batch (the lane has no tenant cap: its queue orders the pages)
    response, messages = h.poll(h.handler(vendor=vendor))
    assert len(messages) == 10
    # Then all ten were triaged in this one batch: nothing re-sent, no quota lease written
    assert response == {"batchItemFailures": []}
    assert len(vendor.prompts) == 10
    assert h.data(*comment_at("calm-0", tenant="page-calm")) is not None
    assert h.data(*comment_at("flood-7", tenant="page-flood")) is not None
    assert h.calls.of("SendMessageBatch") == []
    assert not [p for p in h.calls.of("UpdateItem") if p["Key"]["pk"]["S"].startswith("quota#")]
    assert h.depth() == 0


def test_an_edited_comment_keeps_its_first_label_but_an_untriaged_one_is_labelled(lane):
    h = lane("engagement")
    h.send(h.webhook_row(feed(comment_change("c-2", "Refund now!")), tenant=PAGE, lane="engagement"))
    h.poll(h.handler())
    h.send(h.webhook_row(feed(comment_change("c-2", "thanks, sorted", verb="edited")), tenant=PAGE, lane="engagement"))
    h.poll(h.handler())
    assert h.data(*comment_at("c-2"))["label"] == "complaint"


def test_a_single_comment_job_is_triaged():
    ctx = FakeContext(
        envelope("engagement", "comment.triage", tenant=PAGE),
        {"comment_id": "c-9", "message": "follow me for free money", "post_id": "p"},
        vendor=FakeTaskModel(answers=["spam"]),
    )
    result = engagement.run(ctx)
    [write] = result.writes
    assert write.item["label"] == "spam"
    assert ctx.held == 1
    assert ctx.vendor.prompts == ["follow me for free money"]


def test_reactions_and_removals_are_not_triaged():
    reaction = {"field": "feed", "value": {"item": "reaction", "verb": "add", "post_id": "p"}}
    removal = comment_change("c-3", "x", verb="remove")
    ctx = FakeContext(envelope("engagement", "page.feed", tenant=PAGE), feed(reaction, removal))
    result = engagement.run(ctx)
    assert result.writes == ()
    assert ctx.held == 0  # no comment, no model call, no budget taken
    assert result.detail == {
        "comments": 0,
        "ignored": {"feed_item.reaction": 1, "comment_verb.remove": 1},
        "unprocessable": 0,
    }


def test_something_that_is_not_a_comment_is_permanent():
    with pytest.raises(PermanentError):
        engagement.run(FakeContext(envelope("engagement", "x"), ["not", "a", "comment"]))


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Is it available in blue?", "question"),
        ("This is a scam", "complaint"),
        ("dm me crypto", "spam"),
        ("Lovely photo", "other"),
    ],
)
def test_the_simulated_model_labels_by_rule(text, label):
    assert label_for(text) == label


def test_a_comment_whose_author_id_utf8_cannot_carry_is_skipped_and_counted_and_the_rest_triaged():
    broken = comment_change("c-5", "hello")
    broken["value"]["from"] = {"id": "77\udc00"}
    ctx = FakeContext(
        envelope("engagement", "page.feed", tenant=PAGE),
        feed(comment_change("c-4", "where is my order \ud83d"), broken),
        vendor=FakeTaskModel(answers=["question"]),
    )
    result = engagement.run(ctx)
    [write] = result.writes
    assert (write.item["sk"].split("#")[-1], write.item["text"]) == ("c-4", "where is my order \ufffd")
    assert result.detail["unprocessable"] == 1


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("question", "question"),
        ("Complaint.", "complaint"),
        ("SPAM", "spam"),
        ("Sure! Happy to help", "other"),
        ("", "other"),
    ],
)
def test_an_answer_that_is_not_one_of_the_labels_is_stored_as_other(answer, label):
    # Given a model that answers a comment with `answer`
    ctx = FakeContext(
        envelope("engagement", "comment.triage", tenant=PAGE),
        {"comment_id": "c-9", "message": "hello there", "post_id": "p"},
        vendor=FakeTaskModel(answers=[answer]),
    )
    # Then the stored label is one of the four, never the model's own words
    [write] = engagement.run(ctx).writes
    assert write.item["label"] == label


def test_the_lanes_model_labels_comments_through_converse(lane, model):
    # Given the engagement lane calling its own model (Converse, the runtime's fake of it)
    h = lane("engagement")
    h.send(h.webhook_row(feed(comment_change("c-7", "this is a scam, refund me")), tenant=PAGE, lane="engagement"))
    h.poll(h.handler())
    # Then the comment is labelled from the model's answer to the lane's triage prompt
    assert h.data(*comment_at("c-7"))["label"] == "complaint"
    [call] = model.calls()
    assert call.model_id == "amazon.nova-micro-v1:0"
