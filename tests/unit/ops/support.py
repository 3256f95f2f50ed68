"""A deployed environment in moto, shaped as `lanes-<env>` is: the same stack name and outputs, so
the CLI finds its resources the way it does on AWS (from describe_stacks), with nothing faked.

The template holds what the CLI touches: each lane's queue and DLQ (with redrive), a consumer
function and its event source mapping (created disabled: moto's own mapping would otherwise
"invoke" inside SendMessage and delete the message), and the global outputs. Secrets Manager is
one of the types moto's CloudFormation skips, so the secret is created directly and its ARN
passed in as a parameter.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.validate import validate_parameters

from ops.aws import Aws
from ops.resolve import output_prefix
from pipeline.adapters.sender_key import KEY_FIELD
from stacks.config.environments import EmailEndpoint, Environment, HttpsEndpoint
from tests.support.aws import REGION, SENDER_KEY

ASSUME_LAMBDA = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


def template(env: Environment, *, drop_outputs: tuple[str, ...] = ()) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": ASSUME_LAMBDA}},
        "Topic": {"Type": "AWS::SNS::Topic"},
        # Where `lane pause` marks a lane as the operator's (the lane probe leaves it alone).
        "StateTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "TableName": "state",
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            },
        },
        "AccountsTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            },
        },
    }
    outputs: dict[str, Any] = {
        "ApiUrl": {"Value": "https://api.example.test/"},
        "WebhookUrl": {"Value": "https://api.example.test/webhooks/meta"},
        "WebhookTableName": {"Value": "webhook-log"},
        "JobsTableName": {"Value": "jobs"},
        "StateTableName": {"Value": "state"},
        "DataTableName": {"Value": "data"},
        "AccountsTableName": {"Value": {"Ref": "AccountsTable"}},
        "AlarmTopicArn": {"Value": {"Ref": "Topic"}},
        "MetaSecretArn": {"Value": {"Ref": "MetaSecretArn"}},
        "SenderKeyArn": {"Value": {"Ref": "SenderKeyArn"}},
        "MetaAccessTokenArn": {"Value": {"Ref": "MetaAccessTokenArn"}},
    }
    for lane in env.lanes:
        prefix = output_prefix(lane.name)
        resources[f"{prefix}Dlq"] = {"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1209600}}
        resources[f"{prefix}Queue"] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "VisibilityTimeout": lane.visibility_timeout_seconds,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": [f"{prefix}Dlq", "Arn"]},
                    "maxReceiveCount": lane.policy.max_receives,
                },
            },
        }
        resources[f"{prefix}Function"] = {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Runtime": "python3.12",
                "Handler": "index.handler",
                "Role": {"Fn::GetAtt": ["Role", "Arn"]},
                "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
            },
        }
        resources[f"{prefix}Mapping"] = {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "FunctionName": {"Ref": f"{prefix}Function"},
                "EventSourceArn": {"Fn::GetAtt": [f"{prefix}Queue", "Arn"]},
                "BatchSize": lane.policy.batch_size,
                "Enabled": False,
                "ScalingConfig": {"MaximumConcurrency": lane.policy.max_concurrency},
            },
        }
        outputs[f"{prefix}QueueUrl"] = {"Value": {"Ref": f"{prefix}Queue"}}
        outputs[f"{prefix}QueueArn"] = {"Value": {"Fn::GetAtt": [f"{prefix}Queue", "Arn"]}}
        outputs[f"{prefix}DlqUrl"] = {"Value": {"Ref": f"{prefix}Dlq"}}
        outputs[f"{prefix}DlqArn"] = {"Value": {"Fn::GetAtt": [f"{prefix}Dlq", "Arn"]}}
        outputs[f"{prefix}MappingId"] = {"Value": {"Ref": f"{prefix}Mapping"}}
        outputs[f"{prefix}FunctionName"] = {"Value": {"Ref": f"{prefix}Function"}}
    resources["JobsFunction"] = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "python3.12",
            "Handler": "index.handler",
            "Role": {"Fn::GetAtt": ["Role", "Arn"]},
            "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
        },
    }
    outputs["JobsFunctionName"] = {"Value": {"Ref": "JobsFunction"}}
    for key in drop_outputs:
        outputs.pop(key)
    return {
        "Parameters": {
            "MetaSecretArn": {"Type": "String"},
            "SenderKeyArn": {"Type": "String"},
            "MetaAccessTokenArn": {"Type": "String"},
        },
        "Resources": resources,
        "Outputs": outputs,
    }


@dataclass(frozen=True)
class LaneOutputs:
    queue_url: str
    queue_arn: str
    dlq_url: str
    dlq_arn: str
    mapping_id: str


@dataclass(frozen=True)
class Stack:
    name: str
    lanes: dict[str, LaneOutputs]
    secret_arn: str
    clients: dict[str, Any] = field(repr=False)

    def lane(self, name: str) -> LaneOutputs:
        return self.lanes[name]


def deploy_stack(
    env: Environment,
    *,
    secret: dict[str, str] | None = None,
    access_token: str | None = None,
    drop_outputs: tuple[str, ...] = (),
    endpoint_url: str | None = None,
) -> Stack:
    def client(service: str) -> Any:
        return boto3.client(service, region_name=REGION, endpoint_url=endpoint_url)

    secret_value = {"app_secret": "s3cr3t-app", "verify_token": "s3cr3t-verify"} if secret is None else secret
    secret_arn = client("secretsmanager").create_secret(
        Name=f"lanes-{env.name}-MetaSecret", SecretString=json.dumps(secret_value)
    )["ARN"]
    # moto's CloudFormation makes no secrets: the stack's own are made here and passed in.
    sender_key_arn = client("secretsmanager").create_secret(
        Name=f"lanes-{env.name}-SenderKey", SecretString=json.dumps({KEY_FIELD: SENDER_KEY})
    )["ARN"]
    token_value = json.dumps({"access_token": "EAAG-s3cr3t-token"}) if access_token is None else access_token
    access_token_arn = client("secretsmanager").create_secret(
        Name=f"lanes-{env.name}-MetaAccessToken", SecretString=token_value
    )["ARN"]
    cfn = client("cloudformation")
    name = f"lanes-{env.name}"
    cfn.create_stack(
        StackName=name,
        TemplateBody=json.dumps(template(env, drop_outputs=drop_outputs)),
        Parameters=[
            {"ParameterKey": "MetaSecretArn", "ParameterValue": secret_arn},
            {"ParameterKey": "SenderKeyArn", "ParameterValue": sender_key_arn},
            {"ParameterKey": "MetaAccessTokenArn", "ParameterValue": access_token_arn},
        ],
        Capabilities=["CAPABILITY_IAM"],
    )
    outputs = {o["OutputKey"]: o["OutputValue"] for o in cfn.describe_stacks(StackName=name)["Stacks"][0]["Outputs"]}
    # The stack subscribes each email address and HTTPS endpoint it pages (moto's confirm at once).
    for endpoint in env.on_call:
        if isinstance(endpoint, EmailEndpoint | HttpsEndpoint):
            where = endpoint.address if isinstance(endpoint, EmailEndpoint) else endpoint.url
            client("sns").subscribe(TopicArn=outputs["AlarmTopicArn"], Protocol=endpoint.kind, Endpoint=where)
    lanes = {}
    for lane in env.lanes:
        prefix = output_prefix(lane.name)
        if f"{prefix}DlqUrl" not in outputs:
            continue
        lanes[lane.name] = LaneOutputs(
            queue_url=outputs[f"{prefix}QueueUrl"],
            queue_arn=outputs[f"{prefix}QueueArn"],
            dlq_url=outputs[f"{prefix}DlqUrl"],
            dlq_arn=outputs[f"{prefix}DlqArn"],
            mapping_id=outputs[f"{prefix}MappingId"],
        )
    return Stack(
        name=name,
        lanes=lanes,
        secret_arn=secret_arn,
        clients={s: client(s) for s in ("sqs", "lambda", "cloudwatch", "ssm", "secretsmanager", "dynamodb")},
    )


def publish_public_parameter(name: str, value: str) -> None:
    """A parameter AWS publishes under /aws/service/ (Powertools' layer ARNs), in moto's SSM for
    the test region. moto refuses such names through PutParameter (they are AWS's), so the
    parameter is put in its backend, where GetParameter finds it as it would on AWS."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter, ssm_backends

    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    backend._parameters[name].append(
        Parameter(
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=utcnow(),
            version=1,
            data_type="text",
        )
    )


@dataclass
class FakeClock:
    """Time that moves only when the code under test sleeps."""

    now: float = field(default_factory=time.time)
    sleeps: list[float] = field(default_factory=list)
    on_sleep: Any = None

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


def park(sqs: Any, dlq_url: str, *, body: dict[str, Any] | str, **attributes: str) -> None:
    """A message dead-lettered by the consumer: the original body, the reason attached."""
    sqs.send_message(
        QueueUrl=dlq_url,
        MessageBody=body if isinstance(body, str) else json.dumps(body),
        MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
    )


def envelope(work_id: str, tenant: str, lane: str = "messages", kind: str = "whatsapp_business_account") -> dict:
    return {
        "id": work_id,
        "lane": lane,
        "tenant": tenant,
        "kind": kind,
        "source": "webhook",
        "created_at": time.time() - 600,
        "ref": work_id,
    }


def redrive_by_sqs(sqs: Any, queue_url: str, max_receives: int, body: dict[str, Any]) -> None:
    """A message SQS itself moved to the DLQ: received max_receives times without being deleted."""
    sqs.send_message(QueueUrl=queue_url, MessageBody=json.dumps(body), MessageGroupId=body["tenant"])
    for _ in range(max_receives + 1):
        sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0, MaxNumberOfMessages=1)


def visible(sqs: Any, url: str) -> int:
    return int(
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
            "ApproximateNumberOfMessages"
        ]
    )


def receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    found = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not batch:
            return found
        found.extend(batch)


class StubbedAws(Aws):
    """Clients from moto, except the named ones, which are botocore-stubbed: for the AWS APIs moto
    does not implement (message move tasks, Lambda account settings), answered as AWS answers."""

    def __init__(self, target: Any, stubbed: dict[str, Any]) -> None:
        super().__init__(target)
        self._stubbed = stubbed

    def client(self, service: str) -> Any:
        return self._stubbed[service] if service in self._stubbed else super().client(service)


AVAILABLE = {
    "agreementAvailability": {"status": "AVAILABLE"},
    "authorizationStatus": "AUTHORIZED",
    "entitlementAvailability": "AVAILABLE",
    "regionAvailability": "AVAILABLE",
}
"""GetFoundationModelAvailability's answer for a model the account may call in the region."""


@dataclass
class BedrockCatalogue:
    """Bedrock's control plane as preflight reads it. moto implements none of
    GetFoundationModelAvailability, GetFoundationModel, GetInferenceProfile and
    ListInferenceProfiles, so they are answered here per model id (each answer validated against
    botocore's service model, as Stubber validates its responses); an id not named answers as AWS
    does for an unknown one."""

    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Foundation model id: its availability, or {"Error": {...}} for the error Bedrock answers."""
    profiles: dict[str, str] = field(default_factory=dict)
    """Inference profile id: its status."""
    profile_only: set[str] = field(default_factory=set)
    """Foundation model ids offered only through inference profiles (every other is on demand too)."""
    asked: list[str] = field(default_factory=list)

    def client(self, region: str) -> Any:
        client = boto3.client("bedrock", region_name=region)
        client.meta.events.register("before-parameter-build.bedrock.*", self._remember_id)
        client.meta.events.register_first("before-call.bedrock.*", self._answer)
        return client

    @staticmethod
    def _remember_id(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["catalogue_id"] = (
            params.get("modelId") or params.get("modelIdentifier") or params.get("inferenceProfileIdentifier")
        )

    def _answer(self, model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        asked = context["catalogue_id"]
        if asked is not None:
            self.asked.append(asked)
        if model.name == "GetFoundationModelAvailability":
            answer = self.models.get(asked) or bedrock_error(
                "ValidationException", "The provided model identifier is invalid."
            )
            body = answer if "Error" in answer else {"modelId": asked, **answer}
        elif model.name == "GetFoundationModel":
            types = ["INFERENCE_PROFILE"] if asked in self.profile_only else ["ON_DEMAND"]
            arn = f"arn:aws:bedrock:{REGION}::foundation-model/{asked}"
            body = {"modelDetails": {"modelArn": arn, "modelId": asked, "inferenceTypesSupported": types}}
        elif model.name == "ListInferenceProfiles":
            body = {"inferenceProfileSummaries": [self._profile(p, status) for p, status in self.profiles.items()]}
        elif model.name == "GetInferenceProfile":
            status = self.profiles.get(asked)
            body = (
                bedrock_error("ResourceNotFoundException", "The specified inference profile does not exist.")
                if status is None
                else self._profile(asked, status)
            )
        else:
            raise AssertionError(f"preflight called {model.name}, which this catalogue does not answer")
        if "Error" in body:
            return AWSResponse(None, body["ResponseMetadata"]["HTTPStatusCode"], {}, None), body
        validate_parameters(body, model.output_shape)
        return AWSResponse(None, 200, {}, None), {**body, "ResponseMetadata": {"HTTPStatusCode": 200}}

    @staticmethod
    def _profile(profile_id: str, status: str) -> dict[str, Any]:
        model = profile_id.split(".", 1)[1]
        return {
            "inferenceProfileName": profile_id,
            "inferenceProfileArn": f"arn:aws:bedrock:{REGION}:123456789012:inference-profile/{profile_id}",
            "inferenceProfileId": profile_id,
            "models": [
                {"modelArn": f"arn:aws:bedrock:{region}::foundation-model/{model}"} for region in (REGION, "us-west-2")
            ],
            "status": status,
            "type": "SYSTEM_DEFINED",
        }


def bedrock_error(code: str, message: str, status: int = 400) -> dict[str, Any]:
    """An error as Bedrock answers it (what BedrockCatalogue.models holds instead of an availability)."""
    return {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}
