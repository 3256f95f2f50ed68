"""Deploy a synthesized template into the active moto backend.

moto's CloudFormation creates what it supports (queues with redrive, tables, functions, mappings,
roles, rules, topics, keys, log groups). What it would silently skip is handled here from the same
template: secrets, resource policies and the topic's subscriptions are created directly, and API
routes, alarms, dashboards, insight rules and log metric filters are left to the runtime, which
plays them. Nothing is described twice: a lane added to the catalogue appears here with no other
change.
"""

from __future__ import annotations

import copy
import io
import json
import os
import secrets
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from local_aws.intrinsics import Resolver, references, substitute
from local_aws.synth import SynthesizedApp
from stacks.config.environments import LOCAL_ACCOUNT

ACCOUNT = LOCAL_ACCOUNT
REGION = "us-east-1"
BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"

PLAYED_BY_RUNTIME = frozenset(
    {
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::ApiGatewayV2::Route",
        "AWS::ApiGatewayV2::Integration",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::InsightRule",
        "AWS::CloudWatch::Dashboard",
        "AWS::Logs::MetricFilter",
    }
)
CREATED_DIRECTLY = frozenset(
    {"AWS::SecretsManager::Secret", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy", "AWS::SNS::Subscription"}
)
RUN_AFTER_A_DEPLOY = frozenset({"Custom::AfterDeploy"})
"""What CloudFormation runs at the end of a deploy (stacks/constructs/after_deploy.py). The local
environment keeps no data (nothing to protect) and is deployed once, before any pause: nothing to
run, so it is not deployed."""
LOCAL_API_ID = "local"


def is_alarm_rule(resource: dict[str, Any]) -> bool:
    """A rule on alarms' state changes: the alarms are the runtime's, so it plays these too
    (local_aws/alarms.py), and moto, which never sees an alarm change, is not given them."""
    if resource["Type"] != "AWS::Events::Rule":
        return False
    return resource["Properties"].get("EventPattern", {}).get("source") == ["aws.cloudwatch"]


LOCAL_APP_SECRET_BYTES = 32


@dataclass
class Deployment:
    app: SynthesizedApp
    outputs: dict[str, str]
    physical: dict[str, str]
    resolver: Resolver
    api_url: str
    _attributes: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def template(self) -> dict[str, Any]:
        return self.app.template

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == resource_type}

    def resolve(self, value: Any) -> Any:
        return self.resolver.resolve(value)


def _clients() -> dict[str, Any]:
    return {
        name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
        for name in ("s3", "ssm", "cloudformation", "secretsmanager", "sqs", "sns", "lambda", "dynamodb", "cloudwatch")
    }


def _zip_directory(source: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for root, _, files in os.walk(source):
            for name in sorted(files):
                path = Path(root) / name
                archive.write(path, path.relative_to(source).as_posix())
    return buffer.getvalue()


def _publish_assets(app: SynthesizedApp, s3: Any) -> None:
    """Put the code assets where the template's functions look for them, as `cdk deploy` would."""
    for asset in app.assets.get("files", {}).values():
        source = app.outdir / asset["source"]["path"]
        body = _zip_directory(source) if source.is_dir() else source.read_bytes()
        for destination in asset["destinations"].values():
            bucket = destination["bucketName"].replace("${AWS::AccountId}", ACCOUNT).replace("${AWS::Region}", REGION)
            existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
            if bucket not in existing:
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)


def _public_parameters(template: dict[str, Any]) -> dict[str, str]:
    """Values for SSM-typed parameters that name AWS's public parameters (the Powertools layer):
    moto reserves /aws/ names, and the layer is not needed because the runtime imports the
    installed Powertools."""
    values = {}
    for name, parameter in template.get("Parameters", {}).items():
        if parameter["Type"].startswith("AWS::SSM::Parameter::Value") and str(parameter.get("Default", "")).startswith(
            "/aws/"
        ):
            values[name] = f"arn:aws:lambda:{REGION}:017000801446:layer:local-stand-in:1"
    return values


def _create_secret(logical_id: str, properties: dict[str, Any], stack_name: str, client: Any) -> str:
    if isinstance(properties.get("SecretString"), str):  # a value the template gives (the jobs API's callers)
        given = client.create_secret(
            Name=f"{stack_name}-{logical_id}",
            Description=properties.get("Description", ""),
            SecretString=properties["SecretString"],
        )
        return str(given["ARN"])
    generator = properties.get("GenerateSecretString") or {}
    value: dict[str, Any] = json.loads(generator.get("SecretStringTemplate", "{}"))
    if generator.get("GenerateStringKey"):
        value[generator["GenerateStringKey"]] = secrets.token_urlsafe(24)
    # No Meta app exists locally: the runtime plays the operator who pastes the app secret in
    # after the first deploy. Clients read it back from Secrets Manager like any operator tool.
    if "app_secret" in value and not value["app_secret"]:
        value["app_secret"] = secrets.token_hex(LOCAL_APP_SECRET_BYTES)
    response = client.create_secret(
        Name=f"{stack_name}-{logical_id}",
        Description=properties.get("Description", ""),
        SecretString=json.dumps(value),
    )
    return str(response["ARN"])


def _moto_template(
    template: dict[str, Any], literal: dict[str, dict[str, str]], parameters: dict[str, str]
) -> dict[str, Any]:
    moto_template = copy.deepcopy(template)
    removed = {
        logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in PLAYED_BY_RUNTIME | CREATED_DIRECTLY | RUN_AFTER_A_DEPLOY or is_alarm_rule(resource)
    }
    for logical_id in removed:
        del moto_template["Resources"][logical_id]
    for resource in moto_template["Resources"].values():
        depends = resource.get("DependsOn")
        if isinstance(depends, list):
            resource["DependsOn"] = [d for d in depends if d not in removed]
        elif isinstance(depends, str) and depends in removed:
            del resource["DependsOn"]
    moto_template["Resources"] = substitute(moto_template["Resources"], literal)
    moto_template["Outputs"] = {
        key: output
        for key, output in substitute(moto_template.get("Outputs", {}), literal).items()
        if not references(output) & removed
    }
    for name, value in parameters.items():
        moto_template["Parameters"][name] = {"Type": "String", "Default": value}
    leftover = references(moto_template["Resources"]) & removed
    if leftover:
        raise RuntimeError(f"resources moto will create still refer to ones it will not: {sorted(leftover)}")
    return moto_template


def deploy(app: SynthesizedApp, *, api_url: str) -> Deployment:
    """Create the stack in moto; must run inside an active `mock_aws`."""
    clients = _clients()
    template = app.template
    clients["ssm"].put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value="30", Type="String", Overwrite=True)
    _publish_assets(app, clients["s3"])
    parameters = _public_parameters(template)

    literal: dict[str, dict[str, str]] = {}
    for logical_id, resource in template["Resources"].items():
        kind = resource["Type"]
        if kind == "AWS::SecretsManager::Secret":
            arn = _create_secret(logical_id, resource.get("Properties", {}), app.stack_name, clients["secretsmanager"])
            literal[logical_id] = {"Ref": arn, "Id": arn}
        elif kind == "AWS::ApiGatewayV2::Api":
            literal[logical_id] = {"Ref": LOCAL_API_ID, "ApiEndpoint": api_url.rstrip("/"), "ApiId": LOCAL_API_ID}
        elif kind == "AWS::ApiGatewayV2::Stage":
            literal[logical_id] = {"Ref": resource["Properties"].get("StageName", "$default")}

    clients["cloudformation"].create_stack(
        StackName=app.stack_name,
        TemplateBody=json.dumps(_moto_template(template, literal, parameters)),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
    )
    stack = clients["cloudformation"].describe_stacks(StackName=app.stack_name)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(
            f"moto could not create {app.stack_name}: {_failures(clients['cloudformation'], app.stack_name)}"
        )
    physical = {
        r["LogicalResourceId"]: r.get("PhysicalResourceId", "")
        for r in clients["cloudformation"].describe_stack_resources(StackName=app.stack_name)["StackResources"]
    }
    physical.update({logical_id: values["Ref"] for logical_id, values in literal.items()})
    deployment = Deployment(
        app=app,
        outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
        physical=physical,
        resolver=None,  # type: ignore[arg-type]
        api_url=api_url,
    )
    deployment.resolver = _resolver(deployment, literal, parameters, clients)
    deployment.outputs["ApiUrl"] = api_url
    _apply_resource_policies(deployment, clients)
    _subscribe(deployment, clients)
    _detach_moto_mappings()
    return deployment


def _failures(cloudformation: Any, stack_name: str) -> str:
    """What the stack's events say failed: the resource and the service's message, as CloudFormation
    reports them."""
    events = cloudformation.describe_stack_events(StackName=stack_name)["StackEvents"]
    failed = [
        f"{event['LogicalResourceId']}: {event.get('ResourceStatusReason')}"
        for event in events
        if event["ResourceStatus"] == "CREATE_FAILED"
    ]
    return "; ".join(failed) or "no resource reported a failure"


def _resolver(
    deployment: Deployment, literal: dict[str, dict[str, str]], parameters: dict[str, str], clients: dict[str, Any]
) -> Resolver:
    template = deployment.template["Resources"]

    def ref(logical_id: str) -> str:
        try:
            return deployment.physical[logical_id]
        except KeyError:
            raise KeyError(f"{logical_id} was not deployed") from None

    def get_att(logical_id: str, attribute: str) -> str:
        if logical_id in literal and attribute in literal[logical_id]:
            return literal[logical_id][attribute]
        key = (logical_id, attribute)
        if key not in deployment._attributes:
            deployment._attributes[key] = _attribute(template[logical_id]["Type"], ref(logical_id), attribute, clients)
        return deployment._attributes[key]

    pseudo = {
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": deployment.app.stack_name,
        "AWS::NoValue": "",
    }
    defaults = {name: str(p.get("Default", "")) for name, p in deployment.template.get("Parameters", {}).items()}
    return Resolver(ref=ref, get_att=get_att, pseudo=pseudo, parameters={**defaults, **parameters})


def _attribute(kind: str, physical: str, attribute: str, clients: dict[str, Any]) -> str:
    if kind == "AWS::SQS::Queue":
        if attribute == "QueueName":
            return physical.rsplit("/", 1)[1]
        if attribute == "QueueUrl":
            return physical
        if attribute == "Arn":
            attributes = clients["sqs"].get_queue_attributes(QueueUrl=physical, AttributeNames=["QueueArn"])
            return str(attributes["Attributes"]["QueueArn"])
    if kind == "AWS::Lambda::Function" and attribute == "Arn":
        return str(clients["lambda"].get_function(FunctionName=physical)["Configuration"]["FunctionArn"])
    if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
        return str(clients["dynamodb"].describe_table(TableName=physical)["Table"]["TableArn"])
    if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
        return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{physical}:*"
    if kind == "AWS::SNS::Topic" and attribute == "TopicName":
        return physical.rsplit(":", 1)[1]
    if kind == "AWS::Events::Rule" and attribute == "Arn":
        return physical if physical.startswith("arn:") else f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{physical}"
    if kind == "AWS::KMS::Key" and attribute == "Arn":
        return f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{physical}"
    if kind == "AWS::IAM::Role" and attribute == "Arn":
        return f"arn:aws:iam::{ACCOUNT}:role/{physical}"
    raise KeyError(f"the local runtime cannot resolve {kind}.{attribute}")


def _apply_resource_policies(deployment: Deployment, clients: dict[str, Any]) -> None:
    for resource in deployment.resources("AWS::SQS::QueuePolicy").values():
        properties = deployment.resolve(resource["Properties"])
        for url in properties["Queues"]:
            clients["sqs"].set_queue_attributes(
                QueueUrl=url, Attributes={"Policy": json.dumps(properties["PolicyDocument"])}
            )


def _subscribe(deployment: Deployment, clients: dict[str, Any]) -> None:
    """The on-call topic's subscribers, which moto's CloudFormation does not make. The emulator
    confirms each at once and delivers nothing to an email address: the subscription is there so
    the local stack holds what the template says."""
    for resource in deployment.resources("AWS::SNS::Subscription").values():
        properties = deployment.resolve(resource["Properties"])
        attributes = {"RedrivePolicy": json.dumps(properties["RedrivePolicy"])} if "RedrivePolicy" in properties else {}
        clients["sns"].subscribe(
            TopicArn=properties["TopicArn"],
            Protocol=properties["Protocol"],
            Endpoint=properties["Endpoint"],
            Attributes=attributes,
        )


def _detach_moto_mappings() -> None:
    """moto "invokes" a mapped function inside SendMessage and, with no Docker, deletes the
    messages unprocessed. The mappings stay in moto's Lambda API (so `lanectl lane pause` and
    friends work on them); only the queue's hook into them is removed, and the runtime polls."""
    from moto.sqs.models import sqs_backends

    for queue in sqs_backends[ACCOUNT][REGION].queues.values():
        queue.lambda_event_source_mappings.clear()
