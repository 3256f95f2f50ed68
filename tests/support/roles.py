"""The roles the local template gives each function, bound to a unit test's own resources.

A unit test's tables, queues and secrets (tests/support/aws.py) stand in for the template's by
logical ID, so each function's policies resolve to them, and a handler built with
`function_environ` calls AWS as its role would: a call the role does not allow fails with
AccessDenied here as it would on AWS (local_aws/iam/). The local template is synthesized once
per source tree and kept in the temporary directory, so a test session pays for it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from local_aws.iam.enforcer import ENFORCER
from local_aws.iam.template import Grants, read_grants
from local_aws.intrinsics import Resolver
from stacks.config.environments import ENVIRONMENTS, LOCAL_ACCOUNT
from stacks.constructs.lane import dlq_logical_id, queue_logical_id
from stacks.runtime_env import lane_id
from tests.support.aws import REGION, Deployed

ROOT = Path(__file__).resolve().parents[2]
CONSUMER = "pipeline.handlers.consumer.handler"
TABLES = {
    "WebhookLogTable": "webhook_table",
    "JobsTable": "jobs_table",
    "StateTable": "state_table",
    "DataTable": "data_table",
    "AccountsTable": "accounts_table",
}
_SYNTHETIC_ARNS = {
    "AWS::IAM::Role": "arn:aws:iam::{account}:role/{name}",
    "AWS::Lambda::Function": "arn:aws:lambda:{region}:{account}:function:{name}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{region}:{account}:log-group:{name}:*",
    "AWS::SNS::Topic": "arn:aws:sns:{region}:{account}:{name}",
    "AWS::KMS::Key": "arn:aws:kms:{region}:{account}:key/{name}",
    "AWS::Events::Rule": "arn:aws:events:{region}:{account}:rule/{name}",
    "AWS::SQS::Queue": "arn:aws:sqs:{region}:{account}:{name}",
}
_SYNTHETIC_REFS = {"AWS::SQS::Queue": "https://sqs.{region}.amazonaws.com/{account}/{name}"}


def _source_digest() -> str:
    digest = hashlib.sha256()
    for folder in ("stacks", "lambdas"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_template: dict[str, Any] | None = None


def local_template() -> dict[str, Any]:
    """The local environment's template, synthesized once per source tree (a lock keeps two test
    workers from synthesizing it at once)."""
    global _template
    if _template is None:
        path = Path(tempfile.gettempdir()) / f"lanes-local-template-{_source_digest()}.json"
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.exists():
                from local_aws.synth import synthesize

                app = synthesize(ENVIRONMENTS["local"])
                shutil.rmtree(app.outdir, ignore_errors=True)
                path.write_text(json.dumps(app.template))
        _template = json.loads(path.read_text())
    return _template


SECRETS = {
    "MetaSecret": "secret_arn",
    "SenderKey": "sender_key_arn",
    "MetaAccessToken": "access_token_arn",
    "ReplyCallbackKey": "callback_key_arn",
    "JobsCallers": "jobs_callers_arn",
}
"""Each secret's logical id, and the Resources field holding its ARN where tests deploy it."""


def _resolver(template: dict[str, Any], deployed: Deployed) -> Resolver:
    resources = template["Resources"]
    queues: dict[str, tuple[str, str]] = {}
    for lane, url in deployed.resources.queue_urls.items():
        queues[queue_logical_id(lane)] = (url, deployed.queue_arns[lane])
        queues[dlq_logical_id(lane)] = (deployed.resources.dlq_urls[lane], deployed.dlq_arns[lane])

    mappings = {
        logical_id: deployed.mapping_ids[lane]
        for lane in deployed.mapping_ids
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::EventSourceMapping" and logical_id.startswith(f"{lane_id(lane)}Lane")
    }

    def ref(logical_id: str) -> str:
        if logical_id in mappings:
            return mappings[logical_id]
        if logical_id in TABLES:
            return str(getattr(deployed.resources, TABLES[logical_id]))
        if logical_id in queues:
            return queues[logical_id][0]
        if logical_id in SECRETS:
            return str(getattr(deployed.resources, SECRETS[logical_id]))
        if logical_id not in resources:
            raise KeyError(f"{logical_id} is not in the local template")
        pattern = _SYNTHETIC_REFS.get(resources[logical_id]["Type"], "{name}")
        return pattern.format(account=LOCAL_ACCOUNT, region=REGION, name=f"test-{logical_id}")

    def get_att(logical_id: str, attribute: str) -> str:
        if logical_id in TABLES and attribute == "Arn":
            return f"arn:aws:dynamodb:{REGION}:{LOCAL_ACCOUNT}:table/{ref(logical_id)}"
        if logical_id in queues:
            url, arn = queues[logical_id]
            return {"Arn": arn, "QueueUrl": url, "QueueName": url.rsplit("/", 1)[1]}[attribute]
        pattern = _SYNTHETIC_ARNS.get(resources[logical_id]["Type"])
        if attribute != "Arn" or pattern is None:
            raise KeyError(f"{logical_id}.{attribute} has no stand-in in a unit test")
        return pattern.format(account=LOCAL_ACCOUNT, region=REGION, name=f"test-{logical_id}")

    pseudo = {
        "AWS::Region": REGION,
        "AWS::AccountId": LOCAL_ACCOUNT,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": "lanes-local",
        "AWS::NoValue": "",
    }
    parameters = dict.fromkeys(template.get("Parameters", {}), "test-parameter")
    return Resolver(ref=ref, get_att=get_att, pseudo=pseudo, parameters=parameters)


@contextlib.contextmanager
def enforced(deployed: Deployed) -> Iterator[Grants]:
    """The local template's grants over `deployed`, enforced while the block runs."""
    template = local_template()
    grants = read_grants(template, _resolver(template, deployed), account=LOCAL_ACCOUNT, region=REGION)
    ENFORCER.register(grants)
    try:
        yield grants
    finally:
        ENFORCER.unregister(grants)


def function_logical_id(handler: str, lane: str | None = None) -> str:
    """The template's function for `handler` (a consumer: the one of `lane`)."""
    found = []
    for logical_id, resource in local_template()["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function" or resource["Properties"]["Handler"] != handler:
            continue
        if lane is None or logical_id.startswith(f"{lane_id(lane)}Lane"):
            found.append(logical_id)
    if len(found) != 1:
        raise LookupError(f"{len(found)} functions in the local template run {handler} (lane {lane})")
    return found[0]


def role_credentials(grants: Grants, handler: str, lane: str | None = None) -> dict[str, str]:
    """The variables Lambda would give the function running `handler`: its role's session."""
    logical_id = function_logical_id(handler, lane)
    return ENFORCER.assume(grants.function_roles[logical_id], logical_id).as_environ()
