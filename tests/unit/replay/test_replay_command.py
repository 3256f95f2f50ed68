"""`lanectl replay`: rows of the raw log sent to their lane again after a fix, paced, once per
generation; a dry run that changes nothing; an audit entry; and bad input refused, exit 2, with
every table and queue as it was."""

from __future__ import annotations

import json

import boto3
import pytest

from pipeline import schema
from pipeline.domain import stored_text
from pipeline.domain.webhook import delivery as webhook
from tests.support.aws import REGION
from tests.unit.ingress.conftest import encode
from tests.unit.ops.support import FakeClock
from tests.unit.tasks.payloads import WABA, message_at, text_message, whatsapp

from .conftest import snapshot

OTHER = "waba-200"


def _deliver(pipeline, n: int, waba: str = WABA, prefix: str = "wamid.P") -> list[str]:
    ids = [f"{prefix}{i}" for i in range(n)]
    for wamid in ids:
        pipeline.deliver(whatsapp(messages=[text_message(wamid, f"text of {wamid}")], waba=waba))
    pipeline.drain()
    return ids


def _garble(ids: list[str], tenant: str = WABA) -> None:
    """What the faulty run left: each message stored garbled."""
    table = boto3.resource("dynamodb", region_name=REGION).Table("data")
    for wamid in ids:
        pk, sk = message_at(wamid, tenant=tenant)
        table.update_item(
            Key={"pk": pk, "sk": sk},
            UpdateExpression="SET #t = :g",
            ExpressionAttributeNames={"#t": "text"},
            ExpressionAttributeValues={":g": "garbled"},
        )


def _stored(wamid: str, tenant: str = WABA) -> dict:
    pk, sk = message_at(wamid, tenant=tenant)
    return boto3.resource("dynamodb", region_name=REGION).Table("data").get_item(Key={"pk": pk, "sk": sk})["Item"]


def _audit(generation: int) -> dict | None:
    return (
        boto3.resource("dynamodb", region_name=REGION)
        .Table("state")
        .get_item(Key={"pk": f"audit#replay#g{generation}"}, ConsistentRead=True)
        .get("Item")
    )


def test_a_replay_after_a_fix_reruns_each_task_once_and_a_second_one_changes_nothing(pipeline, stack, lanectl):
    # Given three messages of one tenant the faulty run stored garbled, and one of another tenant
    ids = _deliver(pipeline, 3)
    _deliver(pipeline, 1, waba=OTHER, prefix="wamid.O")
    _garble(ids)

    # When on-call replays the tenant's messages lane as generation 1, at 2 a second
    code, out, err = lanectl(
        "replay",
        "--env",
        "dev",
        "--lane",
        "messages",
        "--tenant",
        WABA,
        "--since",
        "1h",
        "--generation",
        "1",
        "--rate",
        "2",
    )
    pipeline.drain()

    # Then each of the three ran again and stored its text, once, as generation 1
    assert code == 0, err
    assert "replaying 3 row(s) as generation 1 at most 2 msg/s" in out
    assert "done: sent 3 of 3 as generation 1" in out
    assert "listing read webhook-log: " in out
    for wamid in ids:
        stored = _stored(wamid)
        assert stored_text.read(stored["text"]) == f"text of {wamid}"
        assert stored[schema.GENERATION] == 1
    # and tracing one of the deliveries shows its stored unit at generation 1
    payload = whatsapp(messages=[text_message(ids[0], f"text of {ids[0]}")])
    code, traced, _ = lanectl("trace", webhook.log_id(encode(payload)), "--env", "dev")
    assert code == 0
    assert "'generation': 1" in traced
    # and the other tenant's was not touched
    assert schema.GENERATION not in _stored("wamid.O0", tenant=OTHER)
    # and the audit says who, what, when and how many
    [run] = _audit(1)["runs"]
    assert run["selection"]["tenant"] == WABA
    assert run["selection"]["lane"] == "messages"
    assert (run["to_send"], run["sent"], run["outcome"]) == (3, 3, "done")
    assert run["who"].startswith("arn:aws:")
    assert run["started_at"].endswith("Z")

    # When the same replay is run again by mistake
    before = snapshot(pipeline, stack)["tables"]["DataTableName"]
    code, out, _ = lanectl(
        "replay", "--env", "dev", "--lane", "messages", "--tenant", WABA, "--since", "1h", "--generation", "1"
    )
    pipeline.drain()

    # Then it is sent, says the generation was used, and changes nothing it wrote
    assert code == 0
    assert "generation 1 was used before (1 run(s))" in out
    assert snapshot(pipeline, stack)["tables"]["DataTableName"] == before
    assert len(_audit(1)["runs"]) == 2


def test_a_dry_run_says_how_many_and_what_they_cost_and_changes_nothing(pipeline, stack, lanectl):
    _deliver(pipeline, 2)
    before = snapshot(pipeline, stack)

    code, out, err = lanectl("replay", "--env", "dev", "--tenant", WABA, "--since", "1h", "--dry-run", "--rate", "1")

    assert code == 0, err
    assert "dry run: nothing will be sent or written" in out
    assert "matched: 2 row(s); would send 2" in out
    assert "by lane: messages 2" in out
    assert "messages: 1.1 write unit(s) a replayed row" in out
    assert "pace: at most 1 msg/s: about 2s" in out
    assert snapshot(pipeline, stack) == before


def test_the_pace_holds_the_rate(pipeline, stack, lanectl):
    # Given twelve deliveries
    _deliver(pipeline, 12)

    # When they are replayed at 4 a second
    code, out, _ = lanectl(
        "replay", "--env", "dev", "--tenant", WABA, "--since", "1h", "--generation", "1", "--rate", "4"
    )

    # Then they go four a second
    assert code == 0
    assert "done: sent 12 of 12 as generation 1 (4.0 msg/s achieved)" in out


def test_a_ramp_starts_at_two_a_second(pipeline, stack, lanectl):
    _deliver(pipeline, 12)

    code, out, _ = lanectl(
        "replay", "--env", "dev", "--tenant", WABA, "--since", "1h", "--generation", "1", "--rate", "4", "--ramp", "30s"
    )

    # Then the first ten seconds go at the ramp's first step, as a lane resumes
    assert code == 0
    assert "at most 4 msg/s, ramped 2 → 3 → 4 over 30s" in out
    assert "done: sent 12 of 12 as generation 1 (2.0 msg/s achieved)" in out


def test_ctrl_c_keeps_what_was_sent_and_says_how_many(pipeline, stack, lanectl, monkeypatch):
    # Given six deliveries, and an operator who presses Ctrl-C during the second wait between sends
    _deliver(pipeline, 6)

    def sleep(clock, seconds):
        if clock.sleeps:
            raise KeyboardInterrupt
        clock.sleeps.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(FakeClock, "sleep", sleep)

    # When they are replayed at two a second
    code, out, _ = lanectl(
        "replay", "--env", "dev", "--tenant", WABA, "--since", "1h", "--generation", "1", "--rate", "2"
    )

    # Then the four sent stay sent, the command says so, and so does the audit
    assert code == 130
    assert "interrupted: sent 4 of 6 as generation 1" in out
    assert "run the same command again for the rest" in out
    [run] = _audit(1)["runs"]
    assert (run["sent"], run["outcome"]) == (4, "interrupted")
    assert pipeline.lanes["messages"].depth() == 4


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--lane", "nope", "--since", "1h", "--generation", "1"), "unknown lane 'nope'"),
        (("--lane", "messages", "--since", "2099-01-01T00:00Z", "--generation", "1"), "is in the future"),
        (("--lane", "messages", "--since", "1h", "--until", "2h", "--generation", "1"), "is after --until"),
        (("--lane", "messages", "--since", "yesterday", "--generation", "1"), "is not a time"),
        (("--since", "1h", "--generation", "1"), "would replay every delivery and job in the window"),
        (("--lane", "messages", "--since", "1h"), "give --generation N"),
        (("--lane", "messages", "--generation", "1"), "give --since"),
        (("--tenant", "a b", "--since", "1h", "--generation", "1"), "is not a tenant id"),
        (("--lane", "ai", "--since", "1h", "--generation", "1"), "answers customers through Meta"),
        (("--lane", "messages", "--since", "1h", "--generation", "1", "--rate", "0"), "--rate must be 1..500, got 0"),
        (("--lane", "messages", "--since", "1h", "--generation", "0"), "--generation must be 1..1000000, got 0"),
        (("--lane", "messages", "--since", "1h", "--generation", "1", "--status", "gone"), "invalid choice: 'gone'"),
    ],
)
def test_bad_input_exits_2_with_the_reason_and_changes_nothing(pipeline, stack, lanectl, argv, says):
    _deliver(pipeline, 1)
    before = snapshot(pipeline, stack)

    code, out, err = lanectl("replay", "--env", "dev", *argv)

    assert code == 2
    assert says in err
    assert "sent" not in out
    assert snapshot(pipeline, stack) == before


def test_nothing_matched_is_nothing_to_do(pipeline, stack, lanectl):
    _deliver(pipeline, 1)
    before = snapshot(pipeline, stack)

    code, _, err = lanectl("replay", "--env", "dev", "--tenant", OTHER, "--since", "1h", "--generation", "1")

    assert code == 4
    assert "nothing to replay: 0 row(s) matched" in err
    assert snapshot(pipeline, stack) == before


def test_a_replayed_job_runs_once_per_generation_and_its_tenants_count_is_left_alone(pipeline, stack, lanectl):
    # Given an import page the faulty run wrote wrong, its job done and its tenant's count back at 0
    page = {"import_id": "imp-1", "page": 0, "rows": [{"id": "r1", "name": "Ana's shop"}]}
    answer = pipeline.submit({"lane": "bulk", "kind": "import.page", "tenant": "acme", "payload": page})
    job_id = json.loads(answer["body"])["id"]
    pipeline.drain()
    data = boto3.resource("dynamodb", region_name=REGION).Table("data")
    jobs = boto3.resource("dynamodb", region_name=REGION).Table("jobs")
    row_key = {"pk": "import#acme#imp-1", "sk": "row#r1"}
    data.update_item(
        Key=row_key,
        UpdateExpression="SET #f = :bad",
        ExpressionAttributeNames={"#f": "fields"},
        ExpressionAttributeValues={":bad": {"id": "r1", "name": "garbled"}},
    )
    counts = _state_items("queued#")

    # When the bulk lane's jobs are replayed as generation 1, twice
    for _ in range(2):
        code, _, err = lanectl(
            "replay", "--env", "dev", "--lane", "bulk", "--source", "job", "--since", "1h", "--generation", "1"
        )
        assert code == 0, err
        pipeline.drain()

    # Then the page's row was written again (whole, unconditionally: it carries no generation), and the
    # job says which generation finished it
    assert data.get_item(Key=row_key)["Item"]["fields"] == {"id": "r1", "name": "Ana's shop"}
    job = jobs.get_item(Key={"id": job_id}, ConsistentRead=True)["Item"]
    assert (job["status"], job[schema.GENERATION]) == ("done", 1)
    # and the page was counted once more (its generation's run), not twice
    progress = data.get_item(Key={"pk": "import#acme#imp-1", "sk": "progress"})["Item"]
    assert progress["pages_done"] == 2
    # and the tenant's queued count is as it was: a replayed job was not queued
    assert _state_items("queued#") == counts


def _state_items(prefix: str) -> list:
    table = boto3.resource("dynamodb", region_name=REGION).Table("state")
    return sorted(
        (item["pk"], item.get("queued")) for item in table.scan()["Items"] if str(item["pk"]).startswith(prefix)
    )
