"""`lanectl preflight ENV`: what would make a deploy fail, checked before it starts.

Each check prints PASS, FAIL or SKIP with what it saw; any FAIL exits 1 (so `make deploy` stops).
- credentials: who the caller is (and the configured account, when the environment pins one);
- CDK bootstrap: the version parameter the synthesized template checks;
- Powertools layer: the public parameter naming the layer for the pinned version and the functions'
  runtime exists in the target region (the deploy resolves it, and fails without it);
- concurrency: the reservations the environment makes against the account's quota, keeping the
  100 Lambda holds unreserved (a new account's quota of 10 fails any reservation); a function URL
  webhook door's reservation counts whether or not the environment reserves for its lanes;
- Meta secret: set, with the keys the webhook door reads, and a previous secret (during a rotation)
  dated as the door requires (only once the stack exists);
- Meta access token: set and non-empty, when a lane sends replies (only once the stack exists);
- models: each lane's Bedrock model (or inference profile) offered in the target region, callable
  on demand when named by its own id (else the profile to use is named), and the
  account given access (ops/commands/preflight_models.py);
- jobs callers: at least one IAM principal granted tenants in the environment's config (with none,
  the jobs API refuses every request);
- on-call: at least one endpoint the alarms page (with none, every alarm reaches nobody);
- on-call subscriptions and chat channels: each email address and HTTPS endpoint confirmed its
  subscription (once the stack exists), each Slack workspace and Teams team is authorised in AWS
  Chatbot (ops/commands/preflight_on_call.py);
- mutual TLS (when the environment turns it on): the ACM certificate is issued and covers the
  domain, and the truststore object exists and holds PEM certificates (API Gateway refuses the
  domain otherwise, and a truststore without Meta's CA would lock Meta out);
- webhook url: the callback URL to give Meta (the `WebhookUrl` output: the function URL's or the
  API's route, or the edge's or the mutual TLS domain's where those front it), once the stack exists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from ops.aws import describe_error
from ops.commands.preflight_models import check_models
from ops.commands.preflight_on_call import CHAT, SUBSCRIPTIONS, check_chat_channels, check_subscriptions
from ops.commands.preflight_result import FAIL, PASS, SKIP, Result
from ops.context import Context
from ops.cost.plan_checks import PROBE_RESERVATION, SWEEPER_RESERVATION, UNRESERVED_MINIMUM
from ops.errors import FAILED, OK
from ops.resolve import Deployment, find, output_prefix, stack_name
from pipeline.domain.meta_secret import MetaSecrets, SecretsMisconfigured
from pipeline.settings.callers import ALL_TENANTS
from stacks.config.lambda_runtime import ARCHITECTURE, PYTHON_RUNTIME, powertools_parameter, powertools_versions_path
from stacks.runtime_env import SENDING_TASKS

BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
MINIMUM_BOOTSTRAP_VERSION = 6
"""The oldest bootstrap stack the CDK v2 template's BootstrapVersion rule accepts."""
META_SECRET_KEYS = ("app_secret", "verify_token")
ACCESS_TOKEN_KEY = "access_token"  # noqa: S105 (the field's name, not a token)
ROTATION_STEP = "docs/RUNBOOK.md, rotating the Meta access token"


def check_credentials(ctx: Context) -> tuple[Result, str | None]:
    try:
        identity = ctx.aws.client("sts").get_caller_identity()
    except NoCredentialsError:
        return Result(FAIL, "credentials", "no AWS credentials found (set AWS_PROFILE or pass --profile)"), None
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, "credentials", describe_error(exc)), None
    account = str(identity["Account"])
    if ctx.env.account and ctx.env.account != account:
        return Result(
            FAIL, "credentials", f"signed in to account {account}, but {ctx.env.name} is pinned to {ctx.env.account}"
        ), account
    who = f"account {account} as {identity.get('Arn', '?')} in {ctx.target.region}"
    return Result(PASS, "credentials", who), account


def check_bootstrap(ctx: Context, account: str) -> Result:
    hint = f"run: npx cdk bootstrap aws://{account}/{ctx.target.region}"
    try:
        value = ctx.aws.client("ssm").get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ParameterNotFound":
            return Result(FAIL, "cdk bootstrap", f"{ctx.target.region} is not bootstrapped; {hint}")
        return Result(FAIL, "cdk bootstrap", describe_error(exc))
    if int(value) < MINIMUM_BOOTSTRAP_VERSION:
        old = f"bootstrap version {value} is older than {MINIMUM_BOOTSTRAP_VERSION}"
        return Result(FAIL, "cdk bootstrap", f"{old}; {hint}")
    return Result(PASS, "cdk bootstrap", f"version {value}")


def check_powertools(ctx: Context) -> Result:
    name = "powertools layer"
    version = ctx.env.powertools_version
    if ctx.target.endpoint_url:
        return Result(
            SKIP, name, f"{ctx.target.endpoint_url} is an emulator, which holds none of AWS's public parameters"
        )
    parameter = powertools_parameter(version)
    region = ctx.target.region
    try:
        arn = ctx.aws.client("ssm").get_parameter(Name=parameter)["Parameter"]["Value"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ParameterNotFound":
            return Result(FAIL, name, f"cannot read {parameter}: {describe_error(exc)}")
        return Result(
            FAIL,
            name,
            f"Powertools {version} is not published for {PYTHON_RUNTIME} on {ARCHITECTURE} in {region} ({parameter} "
            f"does not exist), so the deploy would fail resolving it. Pick a published version: aws ssm "
            f"get-parameters-by-path --path {powertools_versions_path()} --region {region} --query "
            "'Parameters[].Name' --output text, and set powertools_version in stacks/config/environments.py",
        )
    except BotoCoreError as exc:
        return Result(FAIL, name, f"cannot read {parameter}: {describe_error(exc)}")
    return Result(PASS, name, f"{version} for {PYTHON_RUNTIME} on {ARCHITECTURE} in {region}: {arn}")


def _current_reservations(ctx: Context, deployment: Deployment | None) -> int:
    """What this stack already reserves: redeploying it frees those before taking them again."""
    if deployment is None:
        return 0
    client = ctx.aws.client("lambda")
    total = 0
    outputs = [output_prefix(lane.name) + "FunctionName" for lane in ctx.env.lanes] + ["JobsFunctionName"]
    if ctx.env.webhook_reservation:
        outputs.append("WebhookFunctionName")
    for output in outputs:
        name = deployment.outputs.get(output)
        if name:
            total += int(client.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") or 0)
    return total


def check_concurrency(ctx: Context, deployment: Deployment | None) -> Result:
    try:
        settings = ctx.aws.client("lambda").get_account_settings()["AccountLimit"]
    except (BotoCoreError, ClientError) as exc:
        return Result(SKIP, "concurrency", f"cannot read the account's Lambda settings ({describe_error(exc)})")
    quota = int(settings["ConcurrentExecutions"])
    unreserved = int(settings.get("UnreservedConcurrentExecutions", quota))
    door = ctx.env.webhook_reservation  # the function URL door's only bound: taken either way
    if not ctx.env.reserved_concurrency and not door:
        return Result(PASS, "concurrency", f"{ctx.env.name} reserves nothing; account quota {quota}")
    wanted = door
    if ctx.env.reserved_concurrency:
        wanted += ctx.env.reserved_total + ctx.env.jobs_reservation + SWEEPER_RESERVATION + PROBE_RESERVATION
    held = _current_reservations(ctx, deployment)
    available = unreserved + held - UNRESERVED_MINIMUM
    detail = (
        f"{ctx.env.name} reserves {wanted} (already holding {held}); the account has {unreserved} unreserved "
        f"of {quota} and Lambda keeps {UNRESERVED_MINIMUM}"
    )
    if wanted > available:
        return Result(
            FAIL,
            "concurrency",
            f"{detail}: short by {wanted - available}. Ask for a higher quota, or "
            "turn reservations off for this environment",
        )
    return Result(PASS, "concurrency", detail)


def check_meta_secret(ctx: Context, deployment: Deployment | None) -> Result:
    if deployment is None:
        return Result(
            SKIP, "meta secret", f"{stack_name(ctx.env)} is not deployed yet; set the secret after the first deploy"
        )
    arn = deployment.outputs.get("MetaSecretArn")
    if not arn:
        return Result(FAIL, "meta secret", f"{deployment.stack} has no MetaSecretArn output")
    try:
        raw = ctx.aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, "meta secret", f"cannot read {arn}: {describe_error(exc)}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return Result(FAIL, "meta secret", "the secret is not a JSON object")
    missing = [key for key in META_SECRET_KEYS if not (isinstance(value, dict) and value.get(key))]
    if missing:
        return Result(FAIL, "meta secret", f"set {', '.join(missing)} in {arn}")
    now = time.time()
    try:
        secrets = MetaSecrets.from_json(raw, now)
    except SecretsMisconfigured as exc:
        return Result(FAIL, "meta secret", f"{exc} ({arn})")
    # Never print the values: only that they are there.
    detail = f"{', '.join(META_SECRET_KEYS)} set"
    if secrets.previous_in_force(now) and secrets.previous_expires_at is not None:
        until = datetime.fromtimestamp(secrets.previous_expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        detail += f"; the previous app secret is accepted until {until}"
    return Result(PASS, "meta secret", detail)


def check_access_token(ctx: Context, deployment: Deployment | None) -> Result:
    name = "meta access token"
    senders = [lane.name for lane in ctx.env.lanes if lane.policy.task in SENDING_TASKS]
    if not senders:
        return Result(SKIP, name, f"no lane of {ctx.env.name} sends replies")
    if deployment is None:
        return Result(SKIP, name, f"{stack_name(ctx.env)} is not deployed yet; set the token after the first deploy")
    arn = deployment.outputs.get("MetaAccessTokenArn")
    if not arn:
        return Result(FAIL, name, f"{deployment.stack} has no MetaAccessTokenArn output: deploy the stack again")
    try:
        raw = ctx.aws.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, name, f"cannot read {arn}: {describe_error(exc)}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        return Result(
            FAIL, name, f'{arn} is not a JSON object: set it to {{"{ACCESS_TOKEN_KEY}": "..."}} ({ROTATION_STEP})'
        )
    token = value.get(ACCESS_TOKEN_KEY)
    if not isinstance(token, str) or not token.strip():
        lanes = ", ".join(senders)
        return Result(
            FAIL,
            name,
            f"set {ACCESS_TOKEN_KEY} in {arn} to a system user's token from Meta Business Manager "
            f"({ROTATION_STEP}): without it the {lanes} lane(s) send no reply",
        )
    # Never print the token: only that it is there.
    return Result(PASS, name, f"{ACCESS_TOKEN_KEY} set for the {', '.join(senders)} lane(s)")


def check_jobs_callers(ctx: Context) -> Result:
    grants = ctx.env.jobs.settings.callers
    if not grants:
        return Result(
            FAIL,
            "jobs callers",
            f"no IAM principal is granted a tenant in {ctx.env.name} (JobsConfig.settings.callers in "
            "stacks/config/environments.py): the jobs API would refuse every request with 403",
        )
    described = [
        f"{principal} ({'all tenants' if ALL_TENANTS in tenants else f'{len(tenants)} tenant(s)'})"
        for principal, tenants in grants.items()
    ]
    return Result(PASS, "jobs callers", "; ".join(described))


def check_on_call(ctx: Context) -> Result:
    endpoints = ctx.env.on_call
    if not endpoints:
        return Result(
            FAIL,
            "on-call",
            f"{ctx.env.name} pages nobody: add an email address, an HTTPS endpoint or a Slack or Teams channel to "
            "its on_call in stacks/config/environments.py, or every alarm reaches no one",
        )
    return Result(PASS, "on-call", "; ".join(endpoint.describe() for endpoint in endpoints))


_PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
_TRUSTSTORE_READ_LIMIT = 1024 * 1024
"""API Gateway's truststore holds up to 1,000 certificates in at most 1 MB."""


def _covers(pattern: str, host: str) -> bool:
    """An ACM name covers a host: equal, or a wildcard for exactly one label."""
    pattern, host = pattern.lower(), host.lower()
    if pattern.startswith("*."):
        return host.count(".") >= 2 and host.split(".", 1)[1] == pattern[2:]
    return pattern == host


def check_mutual_tls(ctx: Context) -> Result:
    name = "mutual tls"
    config = ctx.env.mutual_tls
    if config is None:
        return Result(SKIP, name, f"off in {ctx.env.name}")
    try:
        certificate = ctx.aws.client("acm").describe_certificate(CertificateArn=config.certificate_arn)["Certificate"]
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, name, f"cannot read certificate {config.certificate_arn}: {describe_error(exc)}")
    status = certificate.get("Status")
    if status != "ISSUED":
        return Result(
            FAIL, name, f"certificate {config.certificate_arn} is {status}, not ISSUED: finish its validation"
        )
    names = [certificate.get("DomainName", ""), *certificate.get("SubjectAlternativeNames", [])]
    if not any(_covers(n, config.domain_name) for n in names if n):
        return Result(
            FAIL,
            name,
            f"certificate {config.certificate_arn} does not cover {config.domain_name} (it names "
            f"{', '.join(sorted({n for n in names if n}))})",
        )
    where = {"Bucket": config.truststore_bucket, "Key": config.truststore_key}
    if config.truststore_version is not None:
        where["VersionId"] = config.truststore_version
    try:
        body = ctx.aws.client("s3").get_object(**where)["Body"].read(_TRUSTSTORE_READ_LIMIT + 1)
    except (BotoCoreError, ClientError) as exc:
        return Result(FAIL, name, f"cannot read the truststore {config.truststore_uri}: {describe_error(exc)}")
    count = body.count(_PEM_CERTIFICATE)
    if count == 0:
        return Result(
            FAIL,
            name,
            f"the truststore {config.truststore_uri} holds no PEM certificate: upload the CA chain "
            "Meta's mTLS documentation names (docs/RUNBOOK.md, mutual TLS on the webhook)",
        )
    return Result(
        PASS,
        name,
        f"{config.domain_name}: certificate issued; truststore {config.truststore_uri} holds {count} "
        f"certificate(s); the door admits only CN={config.client_subject}",
    )


def check_webhook_url(ctx: Context, deployment: Deployment | None) -> Result:
    name = "webhook url"
    door = "a function URL" if ctx.env.webhook_door.function_url else "the HTTP API's route"
    if deployment is None:
        return Result(
            SKIP, name, f"{stack_name(ctx.env)} is not deployed yet; after the deploy, give Meta its WebhookUrl output"
        )
    url = deployment.outputs.get("WebhookUrl")
    if not url:
        return Result(FAIL, name, f"{deployment.stack} has no WebhookUrl output: deploy the stack again")
    return Result(PASS, name, f"give Meta {url} ({ctx.env.name}'s webhook door is {door})")


def run_preflight(ctx: Context) -> int:
    ctx.console.line(f"preflight for {ctx.env.name} ({ctx.target.where})")
    results: list[Result] = []

    def record(result: Result) -> None:
        results.append(result)
        ctx.console.line(f"{result.status}  {result.name}: {result.detail}")

    credentials, account = check_credentials(ctx)
    record(credentials)
    record(check_jobs_callers(ctx))
    record(check_on_call(ctx))
    if account is None:
        names = ("cdk bootstrap", "powertools layer", "concurrency", "meta secret", "meta access token")
        models = (f"model {model.lane}" for model in ctx.env.models)
        for name in (*names, *models, "mutual tls", SUBSCRIPTIONS, CHAT, "webhook url"):
            record(Result(SKIP, name, "needs credentials"))
    else:
        deployment, problem = _stack(ctx)
        if problem is not None:
            record(Result(FAIL, "stack", problem))
        checks: list[Callable[[], Result]] = [
            lambda: check_bootstrap(ctx, account),
            lambda: check_powertools(ctx),
            lambda: check_concurrency(ctx, deployment),
            lambda: check_meta_secret(ctx, deployment),
            lambda: check_access_token(ctx, deployment),
        ]
        for check in checks:
            record(check())
        for result in check_models(ctx):
            record(result)
        record(check_mutual_tls(ctx))
        record(check_subscriptions(ctx, deployment))
        record(check_chat_channels(ctx))
        record(check_webhook_url(ctx, deployment))
    failed = [r for r in results if r.status == FAIL]
    ctx.console.line(f"{len(failed)} check(s) failed: do not deploy yet" if failed else "ready to deploy")
    return FAILED if failed else OK


def _stack(ctx: Context) -> tuple[Deployment | None, str | None]:
    try:
        return find(ctx.aws.client("cloudformation"), ctx.env), None
    except (BotoCoreError, ClientError) as exc:
        return None, f"cannot describe {stack_name(ctx.env)}: {describe_error(exc)}"
