"""`lanectl meta check`: what Meta says each source account is subscribed to, against the fields
the pipeline routes, through the local Graph API fake (Meta's endpoints, answers and error bodies)."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
import pytest

from local_aws.graph_fake import GraphFake
from ops.errors import FAILED, OK, UNCHECKED, USAGE
from pipeline.adapters.accounts_seen import AccountsSeen
from pipeline.domain.webhook.account_silence import Account
from pipeline.settings.tenant_assets import AssetBinding, TenantAssets
from stacks.config.environments import ENVIRONMENTS
from tests.support.aws import REGION

from .support import deploy_stack

TOKEN = "EAAG-s3cr3t-token"
PAGE_FIELDS = ("feed", "message_echoes", "messages")


@pytest.fixture
def graph():
    fake = GraphFake(token=TOKEN)
    fake.start()
    yield fake
    fake.stop()


def _outputs(stack_name: str) -> dict[str, str]:
    cfn = boto3.client("cloudformation", region_name=REGION)
    return {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=stack_name)["Stacks"][0]["Outputs"]}


def _stamp(stack, account: str, product: str, at: float) -> None:
    table = _outputs(stack.name)["AccountsTableName"]
    notes = AccountsSeen(boto3.client("dynamodb", region_name=REGION), table, ENVIRONMENTS["prod"].accounts.silence)
    notes.note([Account(account, product)], at)


def _check(lanectl, graph, *extra: str):
    return lanectl("meta", "check", "--env", "prod", "--graph-url", graph.url, *extra)


def test_accounts_the_door_stamped_are_checked_and_all_subscribed_passes(lanectl, prod_stack, graph, clock):
    # Given a Page and a WhatsApp account the door has heard from, both subscribed as routed
    _stamp(prod_stack, "1010", "page", clock() - 90)
    _stamp(prod_stack, "2020", "whatsapp", clock() - 30)
    graph.add_account("1010", "page", PAGE_FIELDS)
    graph.add_account("2020", "whatsapp")

    # When the operator checks
    result = _check(lanectl, graph)

    # Then both are listed with their last delivery, subscribed, and the exit is 0
    assert result.code == OK, result.err
    lines = {line.split()[0]: line for line in result.out.splitlines() if line[:4] in ("1010", "2020")}
    assert "page" in lines["1010"]
    assert lines["1010"].split() == ["1010", "page", "-", "1m30s", "ago", "ok", "-"]
    assert lines["2020"].split() == ["2020", "whatsapp", "-", "30s", "ago", "ok", "-"]
    assert "2 account(s): 2 subscribed as routed, 0 lacking, 0 not checked" in result.out


def test_missing_fields_and_a_missing_subscription_are_flagged_with_how_to_resubscribe(
    lanectl, prod_stack, graph, clock
):
    # Given a Page subscribed without its feed, and a WhatsApp account the app is not subscribed to
    _stamp(prod_stack, "1011", "page", clock())
    graph.add_account("1011", "page", ("messages", "message_echoes"))
    graph.add_account("2021", "whatsapp", subscribed=False)

    # When the operator checks it and names the WhatsApp account
    result = _check(lanectl, graph, "--waba", "2021", "--output", "json")

    # Then both are lacking, with what, and the exit says "missing found"
    assert result.code == FAILED
    found = {a["account"]: a for a in json.loads(result.out)["accounts"]}
    assert found["1011"]["state"] == "missing_fields"
    assert found["1011"]["missing_fields"] == ["feed"]
    assert found["1011"]["subscribed_fields"] == ["message_echoes", "messages"]
    assert found["2021"]["state"] == "not_subscribed"
    assert found["2021"]["last_delivery_age_seconds"] is None


def test_the_text_says_how_to_resubscribe_each_lacking_account(lanectl, prod_stack, graph):
    graph.add_account("1012", "page", ("messages",))

    result = _check(lanectl, graph, "--page", "1012")

    assert result.code == FAILED
    assert (
        "re-subscribe 1012: POST /1012/subscribed_apps?subscribed_fields=feed,message_echoes,messages "
        "with the Page's access token" in result.out
    )


def test_without_a_graph_url_it_asks_the_graph_api_the_sending_lane_is_pointed_at(lanectl, prod_stack, graph):
    # Given the ai lane's function pointed at the fake, as a deploy (or the local runtime) sets it
    function = _outputs(prod_stack.name)["AiFunctionName"]
    boto3.client("lambda", region_name=REGION).update_function_configuration(
        FunctionName=function, Environment={"Variables": {"GRAPH_API_URL": graph.url}}
    )
    graph.add_account("1013", "page", PAGE_FIELDS)

    # When the operator checks without --graph-url
    result = lanectl("meta", "check", "--env", "prod", "--page", "1013")

    # Then the fake was asked
    assert result.code == OK, result.err
    assert f"(asked {graph.url})" in result.out


def test_no_token_in_the_secret_cannot_check_and_asks_meta_nothing(lanectl, aws, graph):
    # Given the access token's secret without a token
    deploy_stack(ENVIRONMENTS["prod"], access_token=json.dumps({"access_token": ""}))
    graph.add_account("1014", "page", PAGE_FIELDS)

    result = _check(lanectl, graph, "--page", "1014")

    # Then the exit says "could not check", the message says what to set, and Meta was not called
    assert result.code == UNCHECKED
    assert "holds no access_token" in result.err
    assert graph.refused() == []


def test_a_token_meta_refuses_cannot_check(lanectl, prod_stack, graph):
    graph.add_account("1015", "page", PAGE_FIELDS)
    graph.configure(revoked=True)

    result = _check(lanectl, graph, "--page", "1015")

    assert result.code == UNCHECKED
    assert "Meta refused the access token (190" in result.err


def test_an_account_meta_does_not_know_is_not_checked_with_metas_reason(lanectl, prod_stack, graph):
    graph.add_account("1016", "page", PAGE_FIELDS)

    result = _check(lanectl, graph, "--page", "1016", "--page", "9999")

    # Then the known one is fine, the unknown one is Meta's 100 and the exit says "could not check"
    assert result.code == UNCHECKED
    assert "unknown_to_meta" in result.out
    assert "9999: Meta refused (400, code 100, subcode 33): Unsupported get request." in result.out


def test_graph_api_down_cannot_check(lanectl, prod_stack, graph):
    graph.add_account("1017", "page", PAGE_FIELDS)
    graph.configure(down=True)

    result = _check(lanectl, graph, "--page", "1017")

    assert result.code == UNCHECKED
    assert "did not answer: Meta answered 503: An unexpected error has occurred" in result.err


def test_graph_api_out_of_reach_cannot_check(lanectl, prod_stack, graph):
    url = graph.url
    graph.stop()

    result = lanectl("meta", "check", "--env", "prod", "--graph-url", url, "--page", "1018")

    assert result.code == UNCHECKED
    assert "could not be reached" in result.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--page", "not-an-id"), "--page 'not-an-id' is not a Meta id"),
        (("--waba", "12 34"), "--waba '12 34' is not a Meta id"),
        (("--page", "1" * 21), f"--page '{'1' * 21}' is not a Meta id (1-20 digits"),
        (("--page", "999/subscribed_apps?x="), "--page '999/subscribed_apps?x=' is not a Meta id"),
        (("--app-id", "x1", "--page", "1"), "--app-id 'x1' is not a Meta app id"),
        ((), "no accounts to check"),
    ],
)
def test_bad_input_exits_2_and_asks_meta_nothing(lanectl, prod_stack, graph, argv, message):
    result = _check(lanectl, graph, *argv)

    assert result.code == USAGE
    assert message in result.err
    assert graph.refused() == []


def test_several_apps_need_the_app_id_and_then_it_is_the_one_checked(lanectl, prod_stack, graph):
    # Given a Page the fake lists our app on, asked with a different app id
    graph.add_account("1019", "page", PAGE_FIELDS)

    result = _check(lanectl, graph, "--page", "1019", "--app-id", "555")

    # Then our app's subscription is not the one named: the Page is not subscribed to app 555
    assert result.code == FAILED
    assert "not_subscribed" in result.out


def test_reading_is_all_it_does(lanectl, prod_stack, graph, clock):
    graph.add_account("1020", "page", ("messages",))
    before = graph.account("1020").fields

    _check(lanectl, graph, "--page", "1020")

    assert graph.account("1020").fields == before


def test_an_account_that_normally_sends_and_went_quiet_is_marked_quiet(lanectl, prod_stack, graph, clock):
    # Given a Page stamped every hour for a day, silent for three hours since (prod: quiet after two)
    last = clock() - 3 * 3600
    for hours_before in range(23, -1, -1):
        _stamp(prod_stack, "1021", "page", last - hours_before * 3600)
    _stamp(prod_stack, "1022", "page", clock() - 60)
    graph.add_account("1021", "page", PAGE_FIELDS)
    graph.add_account("1022", "page", PAGE_FIELDS)

    result = _check(lanectl, graph, "--output", "json")

    # Then it is the one marked quiet; the one heard from a minute ago (once) is not
    found = {a["account"]: a for a in json.loads(result.out)["accounts"]}
    assert found["1021"]["quiet"] is True
    assert found["1022"]["quiet"] is False
    text = _check(lanectl, graph).out
    assert "3h00m ago (quiet)" in text


@pytest.fixture
def bound(monkeypatch):
    """prod with two tenants' Pages bound (prod binds none)."""
    assets = AssetBinding({"acme": TenantAssets(pages=("1010",)), "globex": TenantAssets(pages=("3030",))})
    monkeypatch.setitem(ENVIRONMENTS, "prod", replace(ENVIRONMENTS["prod"], tenant_assets=assets))


def test_a_tenant_checks_only_the_accounts_bound_to_it_and_each_shows_its_tenant(
    lanectl, bound, prod_stack, graph, clock
):
    # Given two tenants' Pages the door has heard from
    _stamp(prod_stack, "1010", "page", clock() - 90)
    _stamp(prod_stack, "3030", "page", clock() - 90)
    graph.add_account("1010", "page", PAGE_FIELDS)
    # When the operator checks acme's
    result = _check(lanectl, graph, "--tenant", "acme")
    # Then only acme's Page is asked and listed, with its tenant; globex's is not touched
    assert result.code == OK, result.err
    assert [line.split()[:3] for line in result.out.splitlines() if line[:4] in ("1010", "3030")] == [
        ["1010", "page", "acme"]
    ]


def test_a_tenant_with_another_tenants_page_named_is_refused_and_meta_is_not_asked(lanectl, bound, prod_stack, graph):
    result = _check(lanectl, graph, "--tenant", "acme", "--page", "3030")
    assert result.code == USAGE
    assert "3030 not bound to tenant acme in prod: not checked" in result.err
    assert graph.refused() == []


def test_a_tenant_the_environment_binds_nothing_to_is_refused(lanectl, bound, prod_stack, graph):
    result = _check(lanectl, graph, "--tenant", "initech")
    assert result.code == USAGE
    assert "prod binds no Meta assets to tenant 'initech' (Environment.tenant_assets)" in result.err


def test_a_stamped_id_that_is_not_a_meta_id_is_reported_and_never_asked(lanectl, prod_stack, graph, clock):
    # Given the accounts table holds an id no Meta account has (the door stamps what entries name)
    _stamp(prod_stack, "999_subscribed", "page", clock() - 30)
    graph.add_account("1010", "page", PAGE_FIELDS)
    result = _check(lanectl, graph, "--page", "1010")
    # Then it is listed as not a Meta id, not asked (Meta would have answered unknown_to_meta)
    assert result.code == UNCHECKED
    [line] = [line.split() for line in result.out.splitlines() if line.split()[:1] == ["999_subscribed"]]
    assert line[-2:] == ["not_a_meta_id", "-"]
    assert "999_subscribed: not a Meta id (1-20 digits): not asked" in result.out
