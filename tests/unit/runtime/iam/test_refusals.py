"""A call a function's role does not allow is refused before the emulator sees it, with the error a
boto3 caller gets from the service on AWS; the runtime's own calls keep full rights."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError

from local_aws.iam import ledger
from local_aws.iam.enforcer import ENFORCER
from local_aws.iam.template import read_grants
from local_aws.intrinsics import Resolver

ACCOUNT = "123456789012"
REGION = "us-east-1"


def _template(table: str, other: str) -> dict:
    allow = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["dynamodb:PutItem", "dynamodb:GetItem"],
                "Resource": {"Fn::GetAtt": ["Log", "Arn"]},
            },
            {
                "Effect": "Allow",
                "Action": "dynamodb:Query",
                "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": ["Log", "Arn"]}, "/index/age"]]},
            },
            {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": {"Fn::GetAtt": ["Lane", "Arn"]}},
            {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": {"Ref": "Secret"}},
        ],
    }
    return {
        "Resources": {
            "Log": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Other": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Lane": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "Secret": {"Type": "AWS::SecretsManager::Secret", "Properties": {}},
            "DoorRole": {"Type": "AWS::IAM::Role", "Properties": {}},
            "DoorPolicy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {"PolicyDocument": allow, "Roles": [{"Ref": "DoorRole"}]},
            },
            "Door": {"Type": "AWS::Lambda::Function", "Properties": {"Role": {"Fn::GetAtt": ["DoorRole", "Arn"]}}},
        }
    }


@pytest.fixture
def world(aws):
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for name in ("log", "other"):
        dynamodb.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
    sqs = boto3.client("sqs", region_name=REGION)
    lane = sqs.create_queue(QueueName="lane")["QueueUrl"]
    dead = sqs.create_queue(QueueName="dead")["QueueUrl"]
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secret = secrets.create_secret(Name="meta", SecretString="{}")["ARN"]
    other_secret = secrets.create_secret(Name="other", SecretString="{}")["ARN"]
    physical = {
        "Log": ("log", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/log"),
        "Other": ("other", f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/other"),
        "Lane": (lane, f"arn:aws:sqs:{REGION}:{ACCOUNT}:lane"),
        "Secret": (secret, secret),
        "DoorRole": ("door-role", f"arn:aws:iam::{ACCOUNT}:role/door-role"),
        "Door": ("door", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:door"),
    }
    resolver = Resolver(
        ref=lambda logical: physical[logical][0],
        get_att=lambda logical, attribute: physical[logical][1],
        pseudo={},
        parameters={},
    )
    grants = read_grants(_template("log", "other"), resolver, account=ACCOUNT, region=REGION)
    ENFORCER.register(grants)
    credentials = ENFORCER.assume(grants.function_roles["Door"], "door")
    session = boto3.session.Session(
        region_name=REGION,
        aws_access_key_id=credentials.access_key_id,
        aws_secret_access_key=credentials.secret_access_key,
        aws_session_token=credentials.session_token,
    )
    yield {
        "door": session,
        "admin": boto3.session.Session(region_name=REGION),
        "lane": lane,
        "dead": dead,
        "secret": secret,
        "other_secret": other_secret,
    }
    ENFORCER.unregister(grants)


def _refused(call) -> dict:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]


def test_dynamodb_refuses_an_action_the_role_lacks_with_AccessDeniedException_and_writes_nothing(world):
    door = world["door"].client("dynamodb")
    door.put_item(TableName="log", Item={"id": {"S": "row"}})

    error = _refused(
        lambda: door.update_item(
            TableName="log",
            Key={"id": {"S": "row"}},
            UpdateExpression="SET a = :a",
            ExpressionAttributeValues={":a": {"S": "x"}},
        )
    )

    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        "User: arn:aws:sts::123456789012:assumed-role/door-role/door is not authorized to perform: "
        "dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/log because no "
        "identity-based policy allows the dynamodb:UpdateItem action"
    )
    row = world["admin"].client("dynamodb").get_item(TableName="log", Key={"id": {"S": "row"}})["Item"]
    assert "a" not in row


def test_a_query_is_judged_on_the_index_it_reads_not_on_the_table(world):
    door = world["door"].client("dynamodb")
    query = {"KeyConditionExpression": "id = :id", "ExpressionAttributeValues": {":id": {"S": "x"}}}
    error = _refused(lambda: door.query(TableName="log", **query))
    assert "dynamodb:Query on resource: arn:aws:dynamodb:us-east-1:123456789012:table/log " in error["Message"]


def test_a_transaction_is_refused_whole_when_one_item_is_not_allowed(world):
    # Given a transaction of a put the role may do and a put on a table it may not touch
    door = world["door"].client("dynamodb")
    items = [
        {"Put": {"TableName": "log", "Item": {"id": {"S": "a"}}}},
        {"Put": {"TableName": "other", "Item": {"id": {"S": "b"}}}},
    ]

    error = _refused(lambda: door.transact_write_items(TransactItems=items))

    # Then it fails naming the item's own action and table, and neither item was written
    assert error["Code"] == "AccessDeniedException"
    assert "dynamodb:PutItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/other" in error["Message"]
    admin = world["admin"].client("dynamodb")
    assert "Item" not in admin.get_item(TableName="log", Key={"id": {"S": "a"}})


def test_a_batch_asks_the_batch_action_of_each_table(world):
    door = world["door"].client("dynamodb")
    error = _refused(lambda: door.batch_get_item(RequestItems={"log": {"Keys": [{"id": {"S": "a"}}]}}))
    assert "dynamodb:BatchGetItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/log" in error["Message"]


def test_sqs_refuses_a_queue_the_role_may_not_send_to_with_AccessDenied_and_sends_nothing(world):
    door = world["door"].client("sqs")
    door.send_message(QueueUrl=world["lane"], MessageBody="ok")
    door.send_message_batch(QueueUrl=world["lane"], Entries=[{"Id": "1", "MessageBody": "ok"}])

    error = _refused(lambda: door.send_message(QueueUrl=world["dead"], MessageBody="no"))

    assert error["Code"] == "AccessDenied"
    assert "sqs:SendMessage on resource: arn:aws:sqs:us-east-1:123456789012:dead" in error["Message"]
    attributes = (
        world["admin"]
        .client("sqs")
        .get_queue_attributes(QueueUrl=world["dead"], AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    )
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_secrets_are_judged_by_their_full_arn_whatever_id_the_caller_gives(world):
    door = world["door"].client("secretsmanager")
    assert door.get_secret_value(SecretId="meta")["SecretString"] == "{}"
    error = _refused(lambda: door.get_secret_value(SecretId=world["other_secret"]))
    assert error["Code"] == "AccessDeniedException"
    assert world["other_secret"] in error["Message"]


def test_a_call_the_runtime_has_no_rule_for_is_refused_to_a_role_and_names_where_to_add_one(world):
    error = _refused(lambda: world["door"].client("s3").list_buckets())
    assert "s3:ListBuckets" in error["Message"]
    assert "local_aws/iam/asks.py" in error["Message"]


def test_the_runtimes_own_calls_keep_full_rights(world):
    admin = world["admin"].client("dynamodb")
    admin.put_item(TableName="other", Item={"id": {"S": "x"}})
    assert admin.scan(TableName="other")["Count"] == 1


def test_every_allowed_call_is_noted_under_the_role_and_the_resources_logical_name(world):
    before = ledger.used()
    world["door"].client("sqs").send_message(QueueUrl=world["lane"], MessageBody="ok")
    world["door"].client("secretsmanager").get_secret_value(SecretId=world["secret"])
    after = ledger.used()
    assert after[("DoorRole", "sqs:SendMessage", "Lane")] == before[("DoorRole", "sqs:SendMessage", "Lane")] + 1
    assert after[("DoorRole", "secretsmanager:GetSecretValue", "Secret")] > 0
