"""The grants a template defines, resolved to the resources they were deployed as: each role's
identity policies, each resource's own policy (queue and topic policies, key policies, a
function's invoke permissions), the key each encrypted topic uses, and the logical ID of every
ARN, by which the ledger records a use whatever the deployment named it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from local_aws.iam.asks import queue_arn
from local_aws.iam.documents import Statement, UnsupportedPolicy, parse_document
from local_aws.intrinsics import Resolver

Resolve = Callable[[Any], Any]

_ARN_BY = {
    # resource type: how its ARN is read, Ref or an attribute
    "AWS::DynamoDB::Table": "Arn",
    "AWS::SQS::Queue": "Arn",
    "AWS::SecretsManager::Secret": "Ref",
    "AWS::SNS::Topic": "Ref",
    "AWS::KMS::Key": "Arn",
    "AWS::Lambda::Function": "Arn",
    "AWS::Logs::LogGroup": "Arn",
    "AWS::Events::Rule": "Arn",
    "AWS::IAM::Role": "Arn",
}


@dataclass(frozen=True)
class Role:
    logical_id: str
    name: str
    arn: str
    policies: tuple[Statement, ...]


@dataclass
class Grants:
    """What one deployed template allows, and to whom."""

    account: str
    region: str
    roles: dict[str, Role] = field(default_factory=dict)
    """By role ARN."""
    resource_policies: dict[str, tuple[Statement, ...]] = field(default_factory=dict)
    """By resource ARN."""
    keys: set[str] = field(default_factory=set)
    """KMS key ARNs: a key's policy decides who may use it."""
    topic_keys: dict[str, str] = field(default_factory=dict)
    """Topic ARN to the ARN of the key it is encrypted with."""
    logical: dict[str, str] = field(default_factory=dict)
    """ARN to logical ID."""
    function_roles: dict[str, str] = field(default_factory=dict)
    """Function logical ID to its role's ARN."""

    def logical_name(self, arn: str) -> str:
        """`arn` as the template names it: a table's index as `<table logical ID>/index/<name>`."""
        found = self.logical.get(arn)
        if found is not None:
            return found
        table, marker, index = arn.partition("/index/")
        if marker and table in self.logical:
            return f"{self.logical[table]}/index/{index}"
        group, marker, _ = arn.partition(":log-stream:")
        if marker and f"{group}:*" in self.logical:
            return self.logical[f"{group}:*"]
        if arn.startswith("arn:aws:bedrock:"):
            # A model is AWS's, not the template's: named as the template names it, with the pseudo
            # parameters, so a use recorded here matches every environment's grant of that model.
            service, region, account, rest = arn.split(":", 5)[2:6]
            region = "${AWS::Region}" if region == self.region else region
            account = "${AWS::AccountId}" if account == self.account else account
            return f"arn:${{AWS::Partition}}:{service}:{region}:{account}:{rest}"
        return arn


def read_grants(template: Mapping[str, Any], resolver: Resolver, *, account: str, region: str) -> Grants:
    resources: Mapping[str, Any] = template["Resources"]
    grants = Grants(account=account, region=region)
    for logical_id, resource in resources.items():
        how = _ARN_BY.get(resource["Type"])
        if how is None:
            continue
        try:
            arn = resolver.resolve({"Ref": logical_id} if how == "Ref" else {"Fn::GetAtt": [logical_id, how]})
        except KeyError:
            continue  # not deployed here (a unit test's partial stack): nothing can use it
        grants.logical[str(arn)] = logical_id
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::EventSourceMapping":
            # A mapping's ARN is made from its id in a policy (it has no Arn attribute to read), so
            # its use is named as the template's Fn::Join of it reads.
            try:
                uuid = resolver.resolve({"Ref": logical_id})
            except KeyError:
                continue
            grants.logical[f"arn:aws:lambda:{region}:{account}:event-source-mapping:{uuid}"] = (
                f"arn:${{AWS::Partition}}:lambda:${{AWS::Region}}:${{AWS::AccountId}}:event-source-mapping:{logical_id}"
            )
    _roles(resources, resolver, grants)
    _resource_policies(resources, resolver, grants)
    return grants


def _roles(resources: Mapping[str, Any], resolver: Resolver, grants: Grants) -> None:
    statements: dict[str, list[Statement]] = {}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Role":
            if properties.get("ManagedPolicyArns"):
                raise UnsupportedPolicy(f"{logical_id}: managed policies are not evaluated by the local runtime")
            found = statements.setdefault(logical_id, [])
            for policy in properties.get("Policies", ()):
                found.extend(parse_document(resolver.resolve(policy["PolicyDocument"]), resource_policy=False))
        elif resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            document = None
            for role in properties.get("Roles", ()):
                if not (isinstance(role, Mapping) and "Ref" in role):
                    raise UnsupportedPolicy(f"{logical_id} names a role by {role!r}; the runtime follows Ref only")
                document = document or parse_document(
                    resolver.resolve(properties["PolicyDocument"]), resource_policy=False
                )
                statements.setdefault(role["Ref"], []).extend(document)
    for logical_id, found in statements.items():
        if resources.get(logical_id, {}).get("Type") != "AWS::IAM::Role":
            continue
        arn = str(resolver.resolve({"Fn::GetAtt": [logical_id, "Arn"]}))
        grants.roles[arn] = Role(logical_id, arn.rsplit("/", 1)[1], arn, tuple(found))
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::Function":
            grants.function_roles[logical_id] = str(resolver.resolve(resource["Properties"]["Role"]))


def _resource_policies(resources: Mapping[str, Any], resolver: Resolver, grants: Grants) -> None:
    def add(arn: str, statements: tuple[Statement, ...]) -> None:
        grants.resource_policies[arn] = grants.resource_policies.get(arn, ()) + statements

    for logical_id, resource in resources.items():
        kind = resource["Type"]
        properties = resource.get("Properties", {})
        if kind == "AWS::SQS::QueuePolicy":
            document = parse_document(resolver.resolve(properties["PolicyDocument"]), resource_policy=True)
            for url in resolver.resolve(properties["Queues"]):
                add(queue_arn(str(url), grants.region, grants.account), document)
        elif kind == "AWS::SNS::TopicPolicy":
            document = parse_document(resolver.resolve(properties["PolicyDocument"]), resource_policy=True)
            for topic in resolver.resolve(properties["Topics"]):
                add(str(topic), document)
        elif kind == "AWS::KMS::Key":
            arn = str(resolver.resolve({"Fn::GetAtt": [logical_id, "Arn"]}))
            grants.keys.add(arn)
            if "KeyPolicy" in properties:
                add(arn, parse_document(resolver.resolve(properties["KeyPolicy"]), resource_policy=True))
        elif kind == "AWS::Lambda::Permission":
            arn, statement = _permission(resolver.resolve(properties))
            add(arn, (statement,))
        elif kind == "AWS::SNS::Topic" and "KmsMasterKeyId" in properties:
            grants.topic_keys[str(resolver.resolve({"Ref": logical_id}))] = str(
                resolver.resolve(properties["KmsMasterKeyId"])
            )


def _permission(properties: Mapping[str, Any]) -> tuple[str, Statement]:
    """A Lambda permission is one statement of the function's resource policy."""
    principal = str(properties["Principal"])
    conditions: dict[str, dict[str, str]] = {}
    if "SourceArn" in properties:
        conditions["ArnLike"] = {"aws:SourceArn": str(properties["SourceArn"])}
    if "SourceAccount" in properties:
        conditions["StringEquals"] = {"aws:SourceAccount": str(properties["SourceAccount"])}
    who = {"Service": principal} if principal.endswith(".amazonaws.com") else {"AWS": principal}
    function = str(properties["FunctionName"])
    statement = Statement.parse(
        {
            "Effect": "Allow",
            "Principal": who,
            "Action": properties["Action"],
            "Resource": function,
            "Condition": conditions,
        },
        resource_policy=True,
    )
    return function, statement
