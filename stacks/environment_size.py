"""A function's environment as Lambda measures it, before a deploy does.

Lambda refuses a function whose variables, as a whole, pass 4 KB (4,096 bytes), and it measures
them as one JSON object, `{"NAME":"value",...}` with no spaces, which its refusal quotes back
("String measured: ..."): quotes, colons, commas and the escapes of a JSON value's own quotes
count, not only the names and values. Much of an environment is references (a queue's URL, a
table's name, a secret's ARN), which CloudFormation resolves only at deploy time, so each is
measured here as long as it can be once deployed: the longest commercial region's name, a
12-digit account, and the name CloudFormation generates (`<stack>-<logical id>-<13 random>`,
cut to the service's limit) where the template gives none. The stack checks every function with
this at synthesis (stacks/constructs/function.py), so an environment that would fail the deploy
fails `cdk synth` instead, naming the function and its size. No CDK import here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

LAMBDA_ENVIRONMENT_BYTES = 4096

REGION_STAND_IN = "ap-southeast-5"
"""As long as any commercial region's name: used where the environment pins no region."""
ACCOUNT_STAND_IN = "123456789012"
GENERATED_SUFFIX = "X" * 13
"""The random part of a name CloudFormation generates (`<stack>-<logical id>-<suffix>`)."""
UUID_STAND_IN = "00000000-0000-0000-0000-000000000000"

_NAME_LIMITS = {"AWS::SQS::Queue": 80, "AWS::DynamoDB::Table": 255, "AWS::Lambda::Function": 64}
_UUID_REFS = frozenset({"AWS::KMS::Key", "AWS::Lambda::EventSourceMapping"})

Resource = tuple[str, Mapping[str, Any]]
"""A template resource's type and properties."""


def lambda_environment(variables: Mapping[str, Any]) -> str:
    """The string Lambda measures: the variables as compact JSON (a value that is not a string,
    as CloudFormation may pass one, is measured as the string it becomes)."""
    strings = {str(name): value if isinstance(value, str) else json.dumps(value) for name, value in variables.items()}
    return json.dumps(strings, separators=(",", ":"), ensure_ascii=False)


def lambda_environment_bytes(variables: Mapping[str, Any]) -> int:
    return len(lambda_environment(variables).encode("utf-8"))


class StandIns:
    """What each reference in a template resolves to once deployed, as long as it can be."""

    def __init__(self, stack: str, resource: Callable[[str], Resource | None], region: str | None = None) -> None:
        self._stack = stack
        self._resource = resource
        self._region = region or REGION_STAND_IN

    def resolved(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(self.resolved(part) for part in parts)
        if isinstance(value, dict) and "Ref" in value:
            return self._ref(str(value["Ref"]))
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            return self._attribute(str(logical_id), str(attribute))
        raise ValueError(f"cannot measure {value!r}: say what it resolves to in stacks/environment_size.py")

    def _generated(self, logical_id: str, kind: str) -> str:
        return f"{self._stack}-{logical_id}-{GENERATED_SUFFIX}"[: _NAME_LIMITS.get(kind, 255)]

    def _name(self, logical_id: str, kind: str, properties: Mapping[str, Any], key: str) -> str:
        given = properties.get(key)
        return given if isinstance(given, str) else self._generated(logical_id, kind)

    def _ref(self, logical_id: str) -> str:
        if logical_id == "AWS::Region":
            return self._region
        if logical_id == "AWS::AccountId":
            return ACCOUNT_STAND_IN
        if logical_id.startswith("AWS::"):
            return "aws" if logical_id == "AWS::Partition" else self._stack
        found = self._resource(logical_id)
        if found is None:  # a template parameter: an SSM parameter's value, an ARN at most
            return f"arn:aws:ssm:{self._region}:{ACCOUNT_STAND_IN}:{'X' * 200}"
        kind, properties = found
        if kind == "AWS::SQS::Queue":
            name = self._name(logical_id, kind, properties, "QueueName")
            return f"https://sqs.{self._region}.amazonaws.com/{ACCOUNT_STAND_IN}/{name}"
        if kind == "AWS::SecretsManager::Secret":
            name = self._name(logical_id, kind, properties, "Name")
            return f"arn:aws:secretsmanager:{self._region}:{ACCOUNT_STAND_IN}:secret:{name}-XXXXXX"
        if kind in _UUID_REFS:
            return UUID_STAND_IN
        return self._generated(logical_id, kind)

    def _attribute(self, logical_id: str, attribute: str) -> str:
        found = self._resource(logical_id)
        kind = found[0] if found else "AWS::Unknown::Resource"
        service = kind.split("::")[1].lower()
        return f"arn:aws:{service}:{self._region}:{ACCOUNT_STAND_IN}:{attribute}/{self._generated(logical_id, kind)}"


def oversized(
    functions: Mapping[str, Mapping[str, Any]], stand_ins: StandIns, limit: int = LAMBDA_ENVIRONMENT_BYTES
) -> dict[str, int]:
    """Each function (by name) whose variables, resolved, measure over `limit`, with its size."""
    sizes = {name: measured(variables, stand_ins) for name, variables in functions.items()}
    return {name: size for name, size in sizes.items() if size > limit}


def measured(variables: Mapping[str, Any], stand_ins: StandIns) -> int:
    return lambda_environment_bytes({name: stand_ins.resolved(value) for name, value in variables.items()})
