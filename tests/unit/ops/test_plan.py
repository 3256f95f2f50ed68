"""`plan`: Little's law from the catalogue's traffic, contradictions found, cost at list prices."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ops.cost import environment_cost, pricing
from ops.cost.plan import plan_lane, run_plan
from ops.output import Console
from stacks.config.doors import WebhookDoor, WebhookDoorKind
from stacks.config.environments import ENVIRONMENTS, EdgeConfig
from stacks.config.lane_overrides import LaneOverride, lanes_for
from stacks.config.lanes import Traffic
from stacks.config.mutual_tls import MutualTlsConfig


def _row(out: str, lane: str, section: str = "capacity") -> list[str]:
    """A lane's row in the capacity table (first) or the cost table (second)."""
    rows = [line.split() for line in out.splitlines() if line.startswith(lane + " ")]
    assert len(rows) == 2
    return rows[0 if section == "capacity" else 1]


def _expected_row(lane_name: str, utilisation: float = 0.7) -> list[str]:
    lane = ENVIRONMENTS["prod"].lane(lane_name)
    plan = plan_lane(lane, utilisation)
    return [lane.name, f"{plan.busy_slots:.1f}", str(plan.slots), str(lane.policy.max_concurrency)]


def test_plan_prod_capacity_table(lanectl):
    result = lanectl("plan", "prod")

    assert result.code == 0
    assert result.out.startswith("capacity plan for prod (peak traffic from the lane catalogue; target utilisation")
    for lane_name in ("messages", "ai"):
        row = _row(result.out, lane_name)
        assert [row[0], row[3], row[4], row[5]] == _expected_row(lane_name)


def test_plan_prod_is_consistent_with_its_traffic(lanectl):
    # The shipped catalogue must pass its own planner: strict mode fails on any warning.
    result = lanectl("plan", "prod", "--strict")

    assert result.code == 0, result.out
    assert "no warnings: the configuration is consistent with its traffic assumptions" in result.out
    env = ENVIRONMENTS["prod"]
    lanes_reserved = sum(lane.reserved_concurrency for lane in env.lanes)
    jobs = env.jobs.reserved_concurrency
    assert (
        f"reserved concurrency {lanes_reserved + jobs + 2} (lanes {lanes_reserved} + jobs API {jobs} + sweeper 1 "
        "+ lane probe 1) of "
        "a 1000 quota" in " ".join(result.out.split())
    )


def test_plan_cost_section(lanectl):
    result = lanectl("plan", "prod", "--average", "25%")

    assert (
        "monthly cost at list prices (us-east-1, 2025 list prices, no free tier; 730 h; average traffic = 25% "
        "of peak)" in result.out
    )
    # A 2 KB text: its compressed row (1 unit), its stored message as the done-mark, text deflated
    # and in the sender's partition (1), a tenth of a drain count, and no index entry (neither
    # by_sender nor one for trace by Meta's id); one consistent read of the row.
    assert _row(result.out, "messages", "cost")[0:4] == ["messages", "webhook", "131.4M", "2.1/1"]
    # What the missing index costs instead: a scan of the week of raw deliveries per erasure
    assert "each erasure request: about $1.01, a consistent scan of the 7-day webhook log" in " ".join(
        result.out.split()
    )
    # What a listing of the raw log (trace --tenant, replay) costs, against the index it does without
    assert (
        "each listing of the raw log (lanectl trace --tenant, lanectl replay): about $0.65, an eventually "
        "consistent scan of the webhook log (30.8 GiB) and the jobs table (9.0 GiB); an index by tenant and time "
        "would cost about $95.84 a month (151.9M entries, a write unit each), as much as 147 listings"
    ) in " ".join(result.out.split())
    # Production passes tracing through: no traces are priced.
    assert _row(result.out, "messages", "cost")[9] == "$0.00"
    assert _row(result.out, "scheduled", "cost")[1] == "tick"
    # Eight per lane, one per webhook lane, nine global, the doors' failure reasons, webhooks gone
    # quiet, the ai lane's unanswered replies, the messages lane's failed replies, a pause alarm per
    # reason on the ai lane (model refused and failing, token refused, Meta failing) and the
    # engagement lane (model refused and failing), the probe failing for long on each, the probe's
    # own errors, the quiet accounts, and the doors' Lambda errors, throttles and runs near the
    # timeout (three functions) and 5xx per route (five).
    assert "89 alarms $8.90" in result.out
    # Five routes' detailed metrics, six each, at $0.30 a metric
    assert "route metrics $9.00" in result.out
    # The probe, once a minute: 43,800 runs, each 0.05 GB-s ($0.029), a request ($0.009) and a read
    # of two marks at 0.5 read units each ($0.005)
    assert "lane probe $0.04" in result.out
    assert "total: about $" in result.out


def test_plan_prices_the_per_account_signal_beside_its_alternatives(lanectl):
    # Given prod's 1,000 planned source accounts
    text = " ".join(lanectl("plan", "prod", "--average", "25%").out.split())
    # Then the built signal (hourly notes: 1,000 accounts x 7 door instances x 730 h = 5.1M write
    # units, $3.19; 21,900 sweeps x 67 x 4 KB (1,000 items of 272 bytes) x 0.5 = 0.73M read units, $0.09; one
    # metric $0.30 and one alarm $0.10) is priced against a metric and an alarm per account
    # ($0.40 x 1,000) and a write on every one of 148M deliveries
    assert "source accounts (1,000 planned): last delivery per account and the QuietAccounts alarm $3.69" in text
    assert "at most 5.1M write units with 7 instances, at most 0.035 extra calls a delivery" in text
    assert "instead a metric and an alarm per account: $400.00" in text
    assert "a write per delivery (148M): $92.39" in text


def test_plan_of_an_environment_without_watched_accounts_says_so(lanectl):
    text = " ".join(lanectl("plan", "dev").out.split())

    assert "source accounts: not watched one by one" in text


def test_plan_prices_traces_where_tracing_is_active(lanectl):
    dev = lanectl("plan", "dev", "--average", "25%")
    assert _row(dev.out, "messages", "cost")[9] != "$0.00"
    assert "(here: active)" in " ".join(dev.out.split())


def test_sqs_cost_by_hand():
    # 200/s x 25% x 730 h = 131.4M messages; each is a send plus a receive and a delete per batch of 10
    cost = pricing.lane_cost(ENVIRONMENTS["prod"].lane("messages"), 0.25)
    assert cost.messages == pytest.approx(131_400_000)
    assert cost.sqs == pytest.approx(131.4 * 1.2 * 0.40)
    # 13.14M invocations of 10 x 0.05 s + 0.02 s at 512 MB, plus 131.4M door calls of 30 ms at 1024 MB
    consumer_gb_s = 13_140_000 * 0.52 * 0.5
    door_gb_s = 131_400_000 * 0.03 * 1.0
    assert cost.lambda_ == pytest.approx((consumer_gb_s + door_gb_s) * 0.0000133334 + 144.54 * 0.20)


def test_little_law_numbers():
    # 2 jobs/s x 20 s each = 40 busy; at 50% utilisation, 80 slots; 2/s x 1800 s objective = 3,600
    lane = LaneOverride(traffic=Traffic(peak_per_second=2), service_seconds=20).apply(ENVIRONMENTS["prod"].lane("bulk"))
    plan = plan_lane(lane, 0.5)
    assert (plan.busy_slots, plan.slots, plan.queue_bound) == (40.0, 80, 3600)


def test_plan_needs_an_environment(lanectl):
    result = lanectl("plan")

    assert result.code == 2
    assert "no environment given; pass --env with one of: dev, local, prod, staging" in result.err


def test_plan_rejects_a_bad_utilisation(lanectl):
    result = lanectl("plan", "prod", "--utilisation", "1.5")

    assert result.code == 2
    assert "--utilisation must be above 0 and at most 1" in result.err


def test_the_edge_is_priced_whether_on_or_off_and_counted_only_when_on(capsys):
    # CloudFront and AWS WAF per webhook delivery (webhook lanes only), plus the web ACL and its rules
    env = ENVIRONMENTS["prod"]
    webhook = [lane for lane in env.lanes if pricing.entry(lane) == "webhook"]
    requests = sum(lane.traffic.peak_per_second for lane in webhook) * 0.25 * 730 * 3600
    edge = environment_cost.edge_cost(env.lanes, 0.25)
    assert edge.requests == pytest.approx(requests)
    assert edge.waf == pytest.approx(requests / 1e6 * 0.60)
    assert edge.fixed == 5.00 + 2 * 1.00

    def total(out: str) -> float:
        (line,) = [line for line in out.splitlines() if line.startswith("total: about $")]
        return float(line.split("$")[1].split()[0].replace(",", ""))

    run_plan(env, Console(), utilisation=0.7, average_fraction=0.25, strict=False)
    off = capsys.readouterr().out
    on_env = replace(env, edge=EdgeConfig(enabled=True))
    run_plan(on_env, Console(), utilisation=0.7, average_fraction=0.25, strict=False)
    on = capsys.readouterr().out

    assert "edge (CloudFront + AWS WAF): off; on, it would add about $" in off
    assert "edge (CloudFront + AWS WAF, on): $" in on
    assert total(on) - total(off) == pytest.approx(edge.total, abs=0.02)


def test_mutual_tls_is_priced_on_or_off_and_changes_the_total_by_nothing(capsys):
    env = ENVIRONMENTS["prod"]
    mtls = MutualTlsConfig(
        domain_name="hooks.example.com",
        certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        truststore_uri="s3://example-truststores/meta.pem",
    )

    def plan(environment) -> tuple[str, dict]:
        run_plan(environment, Console(), utilisation=0.7, average_fraction=0.25, strict=False)
        text = capsys.readouterr().out
        run_plan(environment, Console(), utilisation=0.7, average_fraction=0.25, strict=False, output="json")
        return text, json.loads(capsys.readouterr().out)

    off_text, off = plan(env)
    on_text, on = plan(replace(env, mutual_tls=mtls))

    assert "mutual TLS on the webhook: off, $0.00; API Gateway charges by the request alone" in off_text
    assert "mutual TLS on the webhook: on at hooks.example.com, $0.00; API Gateway charges" in on_text
    assert off["cost"]["mutual_tls"] == {"enabled": False, "domain_name": None, "total": 0.0}
    assert on["cost"]["mutual_tls"] == {"enabled": True, "domain_name": "hooks.example.com", "total": 0.0}
    assert on["cost"]["total_per_month"] == off["cost"]["total_per_month"]


def test_plan_as_json_for_scripts(lanectl):
    env = ENVIRONMENTS["prod"]
    # When a script asks for prod's plan as JSON
    result = lanectl("plan", "prod", "--output", "json")

    # Then stdout is one document: every lane's figures as numbers, no warnings
    assert result.code == 0
    planned = json.loads(result.out)
    assert planned["environment"] == "prod"
    assert [lane["lane"] for lane in planned["lanes"]] == [lane.name for lane in env.lanes]
    ai = next(lane for lane in planned["lanes"] if lane["lane"] == "ai")
    expected = plan_lane(env.lane("ai"), 0.7)
    assert (ai["busy_slots"], ai["slots"], ai["max_concurrency"]) == (
        round(expected.busy_slots, 3),
        expected.slots,
        env.lane("ai").policy.max_concurrency,
    )
    assert planned["warnings"] == []
    # And its monthly total is the one the text prints
    text = lanectl("plan", "prod").out
    assert f"total: about ${planned['cost']['total_per_month']:,.2f} a month" in text


def test_strict_plan_as_json_lists_the_warnings_and_fails(capsys):
    env = ENVIRONMENTS["prod"]
    flooded = lanes_for(env.lanes, overrides={"engagement": LaneOverride(traffic=Traffic(peak_per_second=1000))})

    code = run_plan(
        replace(env, lanes=flooded), Console(), utilisation=0.7, average_fraction=0.25, strict=True, output="json"
    )

    assert code == 1
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any(w.startswith("engagement: MaximumConcurrency") for w in warnings), warnings
    assert any(w.startswith("llm: 324.0 calls busy at peak") for w in warnings), warnings


def test_storage_is_priced_for_each_kind_of_data_as_long_as_the_environment_keeps_it():
    from stacks.config.privacy import Retention

    lane = ENVIRONMENTS["prod"].lane("messages")
    month = Retention(raw_deliveries_days=7, effects_days=30)
    # The raw row (0.95 KiB stored) for its own week, the effect (0.9 KiB: the text deflated, and
    # its keys) for its own month
    assert pricing.stored_kib_days(lane, month) == pytest.approx(((2.0 * 0.4 + 0.15) * 7, (2.0 * 0.35 + 0.2) * 30))
    # 131.4M messages a month: a write unit for the row, one for the effect, a tenth of a drain
    # count; a read of the row; storage and point-in-time recovery at $0.25 + $0.20 a GB-month
    messages = 131_400_000
    gb_months = messages / 1024**2 / 30
    standard = messages * 2.1 * 0.625 / 1e6 + messages * 0.125 / 1e6 + gb_months * ((0.95 * 7 + 0.9 * 30) * 0.45)
    assert pricing.lane_cost(lane, 0.25, retention=month).dynamodb == pytest.approx(standard)


def test_effects_kept_a_quarter_are_priced_at_the_infrequent_access_class():
    from stacks.config.privacy import Retention

    lane = ENVIRONMENTS["prod"].lane("messages")
    quarter = Retention(raw_deliveries_days=7, effects_days=90)
    messages = 131_400_000
    gb_months = messages / 1024**2 / 30
    # The effect's write unit at Standard-IA's $0.78125, its 90 days at $0.10 + $0.20; the row and
    # the drain count stay Standard
    expected = (
        messages * 1.1 * 0.625 / 1e6
        + messages * 1.0 * 0.78125 / 1e6
        + messages * 0.125 / 1e6
        + gb_months * (0.95 * 7 * 0.45 + 0.9 * 90 * 0.30)
    )
    assert pricing.lane_cost(lane, 0.25, retention=quarter).dynamodb == pytest.approx(expected)


def test_plan_prices_each_lanes_model_tokens_into_the_total(lanectl):
    env = ENVIRONMENTS["prod"]
    # When on-call plans prod
    result = lanectl("plan", "prod")
    # Then each lane with a model has a line of its tokens, priced at its model's price
    costs = environment_cost.environment_cost(env, 0.25)
    for model in env.models:
        cost = costs.models[model.lane]
        [row] = [line.split() for line in result.out.splitlines() if line.startswith(model.settings.model_id + " ")]
        assert row[1] == model.lane
        assert row[-1] == f"${cost.total:,.2f}"
        calls = env.lane(model.lane).traffic.peak_per_second * 0.25 * 730 * 3600
        price = cost.price
        assert cost.total == pytest.approx(
            calls
            * (
                model.input_tokens_per_call * price.input_per_million
                + model.output_tokens_per_call * price.output_per_million
            )
            / 1e6
        )
        assert cost.total > 0
        # And one call (on the ai lane, one reply turn) is priced on its own
        per_call = (
            model.input_tokens_per_call * price.input_per_million
            + model.output_tokens_per_call * price.output_per_million
        ) / 1e6
        assert cost.per_call == pytest.approx(per_call)
        assert (
            f"a call on {model.lane} ({model.input_tokens_per_call} tokens in, {model.output_tokens_per_call} out): "
            f"${cost.per_call:.6f}, ${cost.per_call * 1000:,.2f} per 1,000"
        ) in result.out
    # And the total includes them
    without_models = costs.total - sum(c.total for c in costs.models.values())
    assert costs.total > without_models
    assert f"total: about ${costs.total:,.2f} a month" in result.out


def test_a_model_without_a_price_is_a_warning_not_a_guess(capsys):
    from stacks.config.models import reply_model

    env = replace(ENVIRONMENTS["prod"], models=(reply_model("meta.llama3-70b-instruct-v1:0"),))
    code = run_plan(env, Console(), utilisation=0.7, average_fraction=0.25, strict=True)
    out = capsys.readouterr().out
    assert code != 0
    assert "ai: no price for model meta.llama3-70b-instruct-v1:0 in ops/cost/prices.py MODEL_PRICES" in out


def test_a_lane_that_sends_replies_pays_a_write_unit_for_its_numbers_rate_and_one_for_the_turns_claim():
    ai = ENVIRONMENTS["prod"].lane("ai")
    not_sending = replace(ai, policy=replace(ai.policy, task="engagement"))
    assert pricing.units(ai).writes - pricing.units(not_sending).writes == 2


def test_a_reply_turn_pays_two_read_units_for_its_switch_and_hold():
    ai = ENVIRONMENTS["prod"].lane("ai")
    not_sending = replace(ai, policy=replace(ai.policy, task="engagement"))
    assert pricing.units(ai).reads - pricing.units(not_sending).reads == pricing.HOLD_READS == 2


def test_plan_as_json_prices_the_per_account_signal_and_its_alternatives(lanectl):
    # Given prod's plan as JSON, and dev's, which watches no account one by one
    prod = json.loads(lanectl("plan", "prod", "--output", "json").out)["cost"]["source_accounts"]
    dev = json.loads(lanectl("plan", "dev", "--output", "json").out)["cost"]["source_accounts"]

    # Then prod's has the figures the text prints, and dev's is null
    assert prod == {
        "planned": 1000,
        "door_instances": 7,
        "note_write_units_per_month": 5_110_000,
        "sweep_read_units_per_month": 733_650,
        "total": 3.69,
        "instead_metric_and_alarm_per_account": 400.0,
        "instead_write_per_delivery": 92.39,
    }
    assert dev is None


def test_both_webhook_doors_are_priced_side_by_side_and_the_total_counts_the_one_used(capsys):
    # Given prod on the HTTP API's route, and the same environment on a function URL
    env = ENVIRONMENTS["prod"]
    url_env = replace(env, webhook_door=WebhookDoor(WebhookDoorKind.FUNCTION_URL))
    webhook = [lane for lane in env.lanes if pricing.entry(lane) == "webhook"]
    requests = sum(lane.traffic.peak_per_second for lane in webhook) * 0.25 * 730 * 3600

    def plan(environment) -> tuple[str, dict]:
        run_plan(environment, Console(), utilisation=0.7, average_fraction=0.25, strict=False)
        text = capsys.readouterr().out
        run_plan(environment, Console(), utilisation=0.7, average_fraction=0.25, strict=False, output="json")
        return text, json.loads(capsys.readouterr().out)

    route_text, route = plan(env)
    url_text, url = plan(url_env)

    # Then each plan shows both doors: the route pays $1.00 a million deliveries and its six
    # detailed metrics; the function URL neither
    for text, planned, used in ((route_text, route, "http_api"), (url_text, url, "function_url")):
        doors = planned["cost"]["webhook_door"]
        assert doors["used"] == used
        assert doors["doors"]["http_api"]["requests"] == pytest.approx(requests / 1e6 * 1.00, abs=0.01)
        assert doors["doors"]["http_api"]["route_metrics"] == pytest.approx(6 * 0.30)
        assert doors["doors"]["function_url"]["total"] == 0.0
        assert doors["doors"]["http_api"]["bound"] == "route throttle 2000/s, burst 5000"
        assert doors["doors"]["function_url"]["bound"] == "120 reserved instances"  # 2000/s x 30 ms x 2
        assert "HTTP API route" in text
        assert "function URL" in text
    assert "HTTP API route (used)" in route_text
    assert "function URL (used)" in url_text
    # And the function URL's environment costs exactly the route's requests and metrics less
    saved = route["cost"]["webhook_door"]["doors"]["http_api"]["total"]
    assert route["cost"]["total_per_month"] - url["cost"]["total_per_month"] == pytest.approx(saved, abs=0.02)
    # And its reservation is counted against the account
    assert "webhook door 120" in url_text
    assert "webhook door" not in " ".join(route["account"])


def test_prompt_caching_is_priced_only_where_the_model_has_it_and_the_prefix_is_long_enough():
    from ops.cost.model_cost import caching, model_costs
    from stacks.config.models import reply_model

    prod = ENVIRONMENTS["prod"]
    # Given prod's reply model (Claude 3 Haiku) and the same lane on Claude 3.5 Haiku, whose cache
    # takes a prefix of 2,048 tokens, with the shipped short system prompt and with a long one
    haiku_3 = reply_model()
    haiku_35 = reply_model("anthropic.claude-3-5-haiku-20241022-v1:0")
    long_prompt = replace(
        haiku_35,
        settings=replace(haiku_35.settings, system_prompt="x" * 4 * 3000),
        input_tokens_per_call=3200,
    )
    cost = model_costs(replace(prod, models=(long_prompt,)), 0.25)["ai"]
    # Then the first saves nothing for want of caching, the second for want of a long enough prefix
    assert "has none on Bedrock" in caching(haiku_3, cost)
    assert "at least 2,048 tokens; the system prompt is about 46" in caching(haiku_35, cost)
    # And the long prompt's 3,000 cached tokens are read at a tenth of $0.80 a million
    assert "save at most $0.002160 a call" in caching(long_prompt, cost)


def test_the_plan_prices_what_auto_reply_adds_on_the_messages_lane_and_says_for_whom(capsys):
    # Given prod (auto-reply for nobody) and local (shop-1 auto-replies)
    for name, state in (("prod", "on for no tenant, so not in the total"), ("local", "on for shop-1")):
        run_plan(ENVIRONMENTS[name], Console(), utilisation=0.7, average_fraction=0.25, strict=False)
        out = " ".join(capsys.readouterr().out.split())
        # Then the plan says for whom it is on, and what a message it starts a turn for adds
        assert f"auto-reply: {state};" in out
        per_million = 9 * 0.625 + 1 * 0.125 + 1 * 0.40
        assert pricing.auto_reply_per_million() == pytest.approx(per_million)
        assert f"${per_million:,.2f} per million such messages" in out
