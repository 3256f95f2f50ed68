"""AWS's policy evaluation as the local runtime plays it: statements, conditions, and the order in
which identity policies, resource policies and key policies decide."""

from __future__ import annotations

import pytest

from local_aws.iam.conditions import holds
from local_aws.iam.documents import UnsupportedPolicy, parse_document
from local_aws.iam.evaluation import RoleSession, ServicePrincipal, context_for, evaluate
from local_aws.iam.patterns import resource_matches

ACCOUNT = "123456789012"
TABLE = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/webhook-log"
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:on-call"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k-1"
ALARM = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:lanes-local-DeadLetters"


def identity(*statements: dict) -> tuple:
    return parse_document({"Statement": list(statements)}, resource_policy=False)


def resource(*statements: dict) -> tuple:
    return parse_document({"Statement": list(statements)}, resource_policy=True)


def session(*statements: dict) -> RoleSession:
    return RoleSession(ACCOUNT, "door-role", "door", identity(*statements), "DoorRole")


def decide(principal, action: str, target: str, resource_policy=None, *, key: bool = False, **context: str):
    return evaluate(
        principal, action, target, context_for(principal, context), resource_policy=resource_policy, key_policy=key
    )


def test_an_action_matches_case_insensitively_and_by_wildcard():
    # Given a role that may PutItem and do any dynamodb:Get* on the table
    role = session({"Effect": "Allow", "Action": ["dynamodb:putitem", "dynamodb:Get*"], "Resource": TABLE})

    # Then the actions it names are allowed, and others are not
    assert decide(role, "dynamodb:PutItem", TABLE).allowed
    assert decide(role, "dynamodb:GetItem", TABLE).allowed
    refused = decide(role, "dynamodb:UpdateItem", TABLE)
    assert not refused.allowed
    assert refused.reason == "because no identity-based policy allows"


def test_a_table_grant_does_not_reach_its_indexes_and_an_index_grant_not_the_table():
    role = session(
        {"Effect": "Allow", "Action": "dynamodb:Query", "Resource": f"{TABLE}/index/pending_by_age"},
    )
    assert decide(role, "dynamodb:Query", f"{TABLE}/index/pending_by_age").allowed
    assert not decide(role, "dynamodb:Query", TABLE).allowed
    assert not decide(role, "dynamodb:Query", f"{TABLE}/index/by_sender").allowed


def test_a_wildcard_in_one_part_of_an_arn_never_spans_into_the_next():
    assert resource_matches("arn:aws:sqs:us-east-*:123456789012:lanes-*", "arn:aws:sqs:us-east-1:123456789012:lanes-ai")
    assert not resource_matches("arn:aws:sqs:*:lanes-ai", "arn:aws:sqs:us-east-1:123456789012:lanes-ai")
    assert resource_matches("*", "anything")


def test_an_explicit_deny_wins_over_any_allow():
    role = session(
        {"Effect": "Allow", "Action": "sqs:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "sqs:DeleteMessage", "Resource": "*"},
    )
    refused = decide(role, "sqs:DeleteMessage", "arn:aws:sqs:us-east-1:123456789012:q")
    assert (refused.allowed, refused.reason) == (False, "with an explicit deny in an identity-based policy")


def test_not_action_and_not_resource_allow_everything_else():
    role = session({"Effect": "Allow", "NotAction": "dynamodb:DeleteItem", "NotResource": f"{TABLE}-other"})
    assert decide(role, "dynamodb:PutItem", TABLE).allowed
    assert not decide(role, "dynamodb:DeleteItem", TABLE).allowed
    assert not decide(role, "dynamodb:PutItem", f"{TABLE}-other").allowed


def test_a_resource_policy_naming_the_role_lets_it_in_without_an_identity_grant():
    role = session()
    policy = resource(
        {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/door-role"},
            "Action": "sqs:SendMessage",
            "Resource": "*",
        }
    )
    assert decide(role, "sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:q", policy).allowed


def test_a_resource_policy_naming_the_account_delegates_to_the_roles_own_policies():
    policy = resource(
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sqs:*", "Resource": "*"}
    )
    queue = "arn:aws:sqs:us-east-1:123456789012:q"
    assert not decide(session(), "sqs:SendMessage", queue, policy).allowed
    allowed_role = session({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue})
    assert decide(allowed_role, "sqs:SendMessage", queue, policy).allowed


def test_the_tls_only_deny_of_a_queue_policy_never_refuses_an_sdk_call_and_always_refuses_plain_http():
    policy = resource(
        {
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": "sqs:*",
            "Resource": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    )
    role = session({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"})
    queue = "arn:aws:sqs:us-east-1:123456789012:q"
    assert decide(role, "sqs:SendMessage", queue, policy).allowed
    refused = decide(role, "sqs:SendMessage", queue, policy, **{"aws:SecureTransport": "false"})
    assert (refused.allowed, refused.reason) == (False, "with an explicit deny in a resource-based policy")


def test_a_service_is_let_in_only_by_a_resource_policy_and_only_for_the_source_it_names():
    # Given a topic policy that lets CloudWatch publish for this account's alarms only
    policy = resource(
        {
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": "sns:Publish",
            "Resource": TOPIC,
            "Condition": {
                "StringEquals": {"aws:SourceAccount": ACCOUNT},
                "ArnLike": {"aws:SourceArn": f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:lanes-local-*"},
            },
        }
    )
    cloudwatch = ServicePrincipal("cloudwatch.amazonaws.com", ACCOUNT)

    def publish(source: str, account: str = ACCOUNT):
        return decide(
            cloudwatch, "sns:Publish", TOPIC, policy, **{"aws:SourceArn": source, "aws:SourceAccount": account}
        )

    # Then this stack's alarm may publish, another stack's or account's may not, and no policy at all refuses
    assert publish(ALARM).allowed
    assert not publish(f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:other-stack-x").allowed
    assert not publish(ALARM, account="999999999999").allowed
    refused = decide(cloudwatch, "sns:Publish", TOPIC, None, **{"aws:SourceArn": ALARM})
    assert (refused.allowed, refused.reason) == (False, "because no resource-based policy allows")


def test_a_key_is_used_only_as_its_key_policy_says():
    key_policy = resource(
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "kms:*", "Resource": "*"}
    )
    may_use = session({"Effect": "Allow", "Action": "kms:Decrypt", "Resource": KEY})
    # A key policy that delegates to the account: the role's own grant decides
    assert decide(may_use, "kms:Decrypt", KEY, key_policy, key=True).allowed
    assert not decide(session(), "kms:Decrypt", KEY, key_policy, key=True).allowed
    # A key without a policy: not even a role granted the key may use it
    assert not decide(may_use, "kms:Decrypt", KEY, None, key=True).allowed


def conditions(block: dict) -> dict:
    (statement,) = identity({"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": block})
    return statement.conditions


def test_conditions_treat_a_missing_key_as_AWS_does():
    present = {"aws:sourcearn": (ALARM,)}
    assert holds(conditions({"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:*:*:alarm:*"}}), present)
    assert not holds(conditions({"ArnLike": {"aws:SourceArn": "arn:aws:cloudwatch:*:*:alarm:*"}}), {})
    assert holds(conditions({"StringNotEquals": {"aws:SourceAccount": ACCOUNT}}), {})
    assert holds(conditions({"StringEqualsIfExists": {"aws:SourceAccount": ACCOUNT}}), {})
    assert holds(conditions({"Null": {"aws:SourceArn": "true"}}), {})
    assert not holds(conditions({"Null": {"aws:SourceArn": "true"}}), present)
    enclosing = conditions({"ForAnyValue:StringEquals": {"dynamodb:EnclosingOperation": ["TransactWriteItems"]}})
    assert holds(enclosing, {"dynamodb:enclosingoperation": ("TransactWriteItems",)})
    assert not holds(enclosing, {"dynamodb:enclosingoperation": ("TransactGetItems",)})


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (
            {
                "Effect": "Allow",
                "Action": "s3:*",
                "Resource": "*",
                "Condition": {"IpAddressLike": {"aws:SourceIp": "x"}},
            },
            "condition operator IpAddressLike",
        ),
        ({"Effect": "Allow", "NotPrincipal": {"AWS": "x"}, "Action": "s3:*", "Resource": "*"}, "NotPrincipal"),
        ({"Effect": "Maybe", "Action": "s3:*", "Resource": "*"}, "Effect is 'Maybe'"),
        ({"Effect": "Allow", "Action": "s3:*", "Resource": {"Fn::GetAtt": ["Table", "Arn"]}}, "unresolved intrinsic"),
    ],
)
def test_a_policy_the_runtime_cannot_evaluate_faithfully_is_refused_when_it_is_read(statement, problem):
    with pytest.raises(UnsupportedPolicy, match=problem):
        parse_document({"Statement": [statement]}, resource_policy="Principal" in statement)
