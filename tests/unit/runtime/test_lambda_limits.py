"""The emulated Lambda refuses a function's environment over 4 KB as Lambda does
(local_aws/moto_limits.py), measured as Lambda measures it: the variables as one compact JSON
object, so the punctuation counts. A template holding such a function fails to deploy, as
CloudFormation fails it (local_aws/moto_stacks.py)."""

from __future__ import annotations

import io
import json
import zipfile

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support.aws import REGION

REFUSAL = (
    "Lambda was unable to configure your environment variables because the environment variables you have "
    "provided exceeded the 4KB limit. String measured: "
)


def _code() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    return buffer.getvalue()


def _variables(measured_bytes: int) -> dict[str, str]:
    """One variable `A` whose JSON, `{"A":"x..."}`, is `measured_bytes` long: 7 bytes more than
    its name and value."""
    return {"A": "x" * (measured_bytes - len('{"A":""}'))}


@pytest.fixture
def role(aws) -> str:
    iam = boto3.client("iam", region_name=REGION)
    return str(iam.create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"])


@pytest.fixture
def lam(aws):
    return boto3.client("lambda", region_name=REGION)


def _create(lam, role: str, name: str, variables: dict[str, str]) -> None:
    lam.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": _code()},
        Environment={"Variables": variables},
    )


def test_a_function_whose_environment_measures_over_4_kb_is_refused_and_not_created(lam, role):
    # Given variables whose names and values are 4,090 bytes, 4,097 as the JSON Lambda measures
    variables = _variables(4097)
    assert sum(len(k) + len(v) for k, v in variables.items()) < 4096
    # When a function is created with them
    with pytest.raises(ClientError) as refused:
        _create(lam, role, "too-big", variables)
    # Then Lambda's refusal quotes the string it measured, and no function exists
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameterValueException"
    assert error["Message"] == REFUSAL + json.dumps(variables, separators=(",", ":"))
    assert lam.list_functions()["Functions"] == []


def test_an_environment_of_exactly_4_kb_is_taken(lam, role):
    _create(lam, role, "at-limit", _variables(4096))
    assert lam.get_function_configuration(FunctionName="at-limit")["Environment"]["Variables"] == _variables(4096)


def test_an_update_over_4_kb_is_refused_and_the_function_keeps_its_variables(lam, role):
    # Given a function with a small environment
    _create(lam, role, "kept", {"LOG_LEVEL": "INFO"})
    # When its configuration is updated to variables measuring 4,097 bytes
    with pytest.raises(ClientError) as refused:
        lam.update_function_configuration(FunctionName="kept", Environment={"Variables": _variables(4097)})
    # Then the update is refused and the variables are as they were
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameterValueException"
    assert error["Message"].startswith(REFUSAL)
    assert lam.get_function_configuration(FunctionName="kept")["Environment"]["Variables"] == {"LOG_LEVEL": "INFO"}


def test_a_template_with_a_function_environment_over_4_kb_fails_to_deploy_and_names_the_function(lam, role):
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="code-assets")
    s3.put_object(Bucket="code-assets", Key="code.zip", Body=_code())
    function = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "python3.12",
            "Role": role,
            "Handler": "handler.handler",
            "Code": {"S3Bucket": "code-assets", "S3Key": "code.zip"},
            "Environment": {"Variables": _variables(4097)},
        },
    }
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    # Given a template whose only function carries 4,097 bytes of environment, when it is deployed
    cloudformation.create_stack(StackName="oversized", TemplateBody=json.dumps({"Resources": {"Fn": function}}))
    # Then the stack fails as CloudFormation fails it, its events carry Lambda's refusal, and no
    # function was created
    (stack,) = cloudformation.describe_stacks(StackName="oversized")["Stacks"]
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    events = cloudformation.describe_stack_events(StackName="oversized")["StackEvents"]
    (failed,) = [e for e in events if e["ResourceStatus"] == "CREATE_FAILED"]
    assert failed["LogicalResourceId"] == "Fn"
    assert failed["ResourceStatusReason"].startswith(f'Resource handler returned message: "{REFUSAL}')
    assert lam.list_functions()["Functions"] == []
