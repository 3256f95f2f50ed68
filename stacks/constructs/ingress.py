"""The doors: an HTTP API with a throttle per route and access logs, the Meta webhook (ingress
function, authenticated by the HMAC signature it verifies) as the API's route or, where the
environment says (`WebhookDoor`, stacks/config/doors.py), as the function's own URL bounded by its
reserved concurrency, the jobs API (IAM-authorised), and the routes other constructs serve
through the API (`serve`: Meta's data-deletion callback)."""

from __future__ import annotations

import json

import jsii
from aws_cdk import Aws, CfnRule, CfnRuleAssertion, Duration, Fn
from aws_cdk import aws_apigateway as apigw_v1
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from pipeline import metric_filters, metric_names
from stacks.config.doors import NO_FUNCTION_URLS, WEBHOOK_PATH, WEBHOOK_ROUTE
from stacks.config.environments import Environment, Throttle
from stacks.constructs.alarms import Notice, OnCall
from stacks.constructs.function import FunctionSpec, PipelineFunction, SharedCode, log_group
from stacks.constructs.function_alarms import function_alarms, route_5xx_alarm, route_alarm_id, url_5xx_alarm
from stacks.constructs.grants import DEPTH, SEND, grant_queue, grant_rows, grant_secret
from stacks.constructs.removal import keeps_data
from stacks.constructs.tables import PipelineTables
from stacks.runtime_env import metrics_namespace

META_SECRET_ID = "MetaSecret"  # noqa: S105 (a logical ID, not a secret)

_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    # The account only: identity.caller and identity.user end in a role's session name, often a
    # person's e-mail address; the jobs function logs the role without it (settings/callers.py).
    "callerAccount": "$context.identity.accountId",
}


@jsii.implements(apigw.IAccessLogSettings)
class _AccessLogSettings:
    """HTTP API access logs as JSON lines (the interface has no ready-made implementation)."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigw.LogGroupLogDestination(log_group)
        self._format = apigw_v1.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS))

    @property
    def destination(self) -> apigw.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw_v1.AccessLogFormat:
        return self._format


def rejected_signatures(env: Environment, period: Duration) -> cloudwatch.Metric:
    """Every signature the door refused, whatever the reason: the second dimension set the door
    publishes WebhookRejected under (see pipeline.metric_names.REJECTED_BY)."""
    return cloudwatch.Metric(
        namespace=metrics_namespace(env),
        metric_name=metric_names.WEBHOOK_REJECTED,
        dimensions_map={metric_names.REJECTED_BY: metric_names.SIGNATURE, "service": "ingress"},
        period=period,
        statistic="Sum",
    )


class MetaSecret(Construct):
    """Meta's app secret (current and previous, for rotation) and the verify token. The verify
    token is generated; the app secret is set by an operator after the first deploy
    (`lanectl preflight` checks it). Never in an environment variable or the template."""

    def __init__(self, scope: Construct, construct_id: str, *, env: Environment) -> None:
        super().__init__(scope, construct_id)
        self.secret = secretsmanager.Secret(
            self,
            "Secret",
            description=f"lanes-{env.name}: Meta app secret(s) and webhook verify token",
            # Pinned by tests/infra/test_secret_generation.py: any change to the generator makes the
            # next deploy generate the value again, over the stored one.
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"app_secret": "", "previous_app_secret": ""}),
                generate_string_key="verify_token",
                exclude_punctuation=True,
                password_length=40,
            ),
            removal_policy=keeps_data(env),
        )
        child = self.secret.node.default_child
        assert isinstance(child, secretsmanager.CfnSecret)
        child.override_logical_id(META_SECRET_ID)


WEBHOOK_TIMEOUT_SECONDS = 10
JOBS_TIMEOUT_SECONDS = 10


class Ingress(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: Environment,
        shared: SharedCode,
        tables: PipelineTables,
        queues: dict[str, sqs.Queue],
        webhook_lanes: frozenset[str],
        secret: secretsmanager.ISecret,
        sender_key: secretsmanager.ISecret,
        jobs_callers: secretsmanager.ISecret,
        ingress_environment: dict[str, str],
        jobs_environment: dict[str, str],
        on_call: OnCall,
    ) -> None:
        super().__init__(scope, construct_id)
        self.webhook = PipelineFunction(
            self,
            "Webhook",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.ingress.handler",
                environment=ingress_environment,
                timeout_seconds=WEBHOOK_TIMEOUT_SECONDS,
                # More memory is more CPU: the door verifies an HMAC over up to 3 MB and must
                # answer in milliseconds.
                memory_mb=1024,
                description="Meta webhook door: verify, log, route, enqueue, answer",
                # Behind a function URL nothing else bounds it (0 behind the API: the route's throttle does).
                reserved_concurrency=env.webhook_reservation or None,
            ),
        )
        self.webhook.count_lines(metric_filters.DOOR, metrics_namespace(env))
        webhook_fn = self.webhook.function
        # The row (one conditional put, or a transaction of puts with its body's parts), and
        # `mark_unsent` when the send fails: the row then waits in the pending index for the sweeper.
        grant_rows(webhook_fn, tables.webhook_log, ("dynamodb:PutItem", "dynamodb:UpdateItem"))
        if env.accounts is not None:
            # Each source account's last-seen item, at most once per account per instance per
            # note interval (adapters/accounts_seen.py).
            grant_rows(webhook_fn, tables.accounts, ("dynamodb:UpdateItem",))
        grant_secret(webhook_fn, secret)
        grant_secret(webhook_fn, sender_key)
        for lane in sorted(webhook_lanes):
            grant_queue(webhook_fn, queues[lane], SEND)

        self.jobs = PipelineFunction(
            self,
            "Jobs",
            shared=shared,
            spec=FunctionSpec(
                handler="pipeline.handlers.jobs.handler",
                environment=jobs_environment,
                timeout_seconds=JOBS_TIMEOUT_SECONDS,
                memory_mb=512,
                description="Jobs API: admission control, job rows, enqueue, status",
                # Its own slots, so a webhook flood scaling the door cannot starve it.
                reserved_concurrency=env.jobs_reservation or None,
            ),
        )
        jobs_fn = self.jobs.function
        # The job row is put with the tenant's queued counter in one transaction; GET reads it back;
        # a job whose send failed is marked for the sweeper; admission reads the lane's drain buckets.
        grant_rows(jobs_fn, tables.jobs, ("dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem"))
        grant_rows(jobs_fn, tables.state, ("dynamodb:UpdateItem", "dynamodb:BatchGetItem"))
        grant_secret(jobs_fn, sender_key)
        grant_secret(jobs_fn, jobs_callers)  # read at each cold start
        # A job may name any lane: admission reads its depth, the job is sent to it.
        for queue in queues.values():
            grant_queue(jobs_fn, queue, (*SEND, *DEPTH))

        self.api = apigw.HttpApi(
            self,
            "Api",
            description=f"lanes-{env.name}: Meta webhooks and the jobs API",
            create_default_stage=False,
        )
        self.access_logs = log_group(self, "AccessLogs", env)
        self.stage = apigw.HttpStage(
            self,
            "Stage",
            http_api=self.api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigw.ThrottleSettings(rate_limit=env.api.other.rate_limit, burst_limit=env.api.other.burst_limit),
            access_log_settings=_AccessLogSettings(self.access_logs),
        )
        jobs_integration = integrations.HttpLambdaIntegration("JobsIntegration", jobs_fn)
        iam = authorizers.HttpIamAuthorizer()
        self.function_url: lambda_.FunctionUrl | None = None
        self.webhook_routes: list[apigw.HttpRoute] = []
        if env.webhook_door.function_url:
            # AuthType NONE: Meta cannot sign for IAM; the function verifies Meta's signature.
            self.function_url = webhook_fn.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
            if env.region is None:
                # An environment pinned to a region is checked by its config; one that is not
                # stops here rather than half-way through a deploy.
                CfnRule(
                    self,
                    "FunctionUrlsHere",
                    assertions=[
                        CfnRuleAssertion(
                            assert_=Fn.condition_not(Fn.condition_contains(sorted(NO_FUNCTION_URLS), Aws.REGION)),
                            assert_description="This region has no Lambda function URLs: use the HTTP API webhook "
                            "door (WebhookDoor in stacks/config/doors.py) here.",
                        )
                    ],
                )
        else:
            self.webhook_routes = self.api.add_routes(
                path=WEBHOOK_PATH,
                methods=[apigw.HttpMethod.GET, apigw.HttpMethod.POST],
                integration=integrations.HttpLambdaIntegration("WebhookIntegration", webhook_fn),
            )
        self.jobs_routes = [
            *self.api.add_routes(
                path="/jobs", methods=[apigw.HttpMethod.POST], integration=jobs_integration, authorizer=iam
            ),
            *self.api.add_routes(
                path="/jobs/{id}", methods=[apigw.HttpMethod.GET], integration=jobs_integration, authorizer=iam
            ),
        ]
        self._on_call = on_call
        self._shed_threshold = env.alarms.jobs_shed_threshold
        self.route_alarms: list[cloudwatch.Alarm] = []
        self._route_settings: dict[str, dict[str, float | bool]] = {}
        throttles = {"POST /jobs": env.api.jobs, "GET /jobs/{id}": env.api.jobs}
        if self.webhook_routes:
            throttles[WEBHOOK_ROUTE] = env.api.webhook
        self._throttle([*self.webhook_routes, *self.jobs_routes], throttles)
        if self.function_url is not None:
            self.route_alarms.append(url_5xx_alarm(self, on_call, "WebhookUrl5xx", webhook_fn))

        self._failure_alarms(env, on_call)
        self.function_alarms = [
            *function_alarms(self, on_call, "Webhook", webhook_fn, WEBHOOK_TIMEOUT_SECONDS, "The webhook door"),
            *function_alarms(self, on_call, "Jobs", jobs_fn, JOBS_TIMEOUT_SECONDS, "The jobs API"),
        ]
        self.quiet_alarm = self._quiet_alarm(env, on_call)
        self.signature_alarm = on_call.alarm(
            self,
            "WebhookSignaturesRejected",
            notice=Notice.CONDITION,
            metric=rejected_signatures(env, on_call.period()),
            threshold=env.alarms.rejected_signatures,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            description=f"The webhook door refused at least {env.alarms.rejected_signatures} signatures a period "
            "(missing, malformed or not matching the Meta secret): someone else is posting, or the stored secret "
            "is not the one Meta signs with. See docs/RUNBOOK.md#rejected-signatures.",
        )

    def _quiet_alarm(self, env: Environment, on_call: OnCall) -> cloudwatch.Alarm | None:
        """No webhook enqueued on any lane for the environment's quiet time. A period with no line
        has no datapoint at all, so a period with one is OK and the quiet time without any leaves
        the alarm no data, which pages (`Notice.SILENCE`). A deploy before Meta's first delivery
        (which cannot come before the app secret is set) stays in INSUFFICIENT_DATA and pages nobody."""
        if env.alarms.webhooks_quiet_seconds is None:
            return None
        minutes = env.alarms.webhooks_quiet_seconds / 60
        return on_call.alarm(
            self,
            "WebhooksQuiet",
            notice=Notice.SILENCE,
            metric=cloudwatch.Metric(
                namespace=metrics_namespace(env),
                metric_name=metric_names.WEBHOOK_ENQUEUED_TOTAL,
                dimensions_map={"service": "ingress"},
                period=on_call.period(),
                statistic="Sum",
            ),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=env.alarms.quiet_periods,
            description=f"No webhook was enqueued for {minutes:g} min: Meta stopped sending (a subscription "
            "disabled after an hour of failures, a changed callback URL, removed permissions) or the door stopped "
            "taking deliveries. See docs/RUNBOOK.md#webhooks-quiet.",
        )

    def serve(
        self,
        function: lambda_.IFunction,
        routes: dict[str, Throttle],
        *,
        integration_id: str,
    ) -> list[apigw.HttpRoute]:
        """Routes ("POST /path") to `function`, without an authoriser (the function authenticates
        its caller), each with its own throttle."""
        integration = integrations.HttpLambdaIntegration(integration_id, function)
        served: list[apigw.HttpRoute] = []
        for key in routes:
            method, path = key.split(" ", 1)
            served += self.api.add_routes(path=path, methods=[apigw.HttpMethod(method)], integration=integration)
        self._throttle(served, routes)
        return served

    def _throttle(self, routes: list[apigw.HttpRoute], throttles: dict[str, Throttle]) -> None:
        """Each route its own bucket (the L2 stage sets only the default). API Gateway refuses
        settings for a route key it does not have yet, so the stage waits for its routes."""
        by_key = {}
        for route in routes:
            resource = route.node.default_child
            assert isinstance(resource, apigw.CfnRoute)
            by_key[resource.route_key] = route
        for key, throttle in throttles.items():
            self.stage.node.add_dependency(by_key[key])
            self._route_settings[key] = {
                "ThrottlingRateLimit": throttle.rate_limit,
                "ThrottlingBurstLimit": throttle.burst_limit,
                # Per-route metrics (API Gateway's 5xx by route), which the route's alarm reads.
                "DetailedMetricsEnabled": True,
            }
            # POST /jobs answers 503 when admission sheds, which is the design working.
            threshold = self._shed_threshold if key == "POST /jobs" else 1
            self.route_alarms.append(
                route_5xx_alarm(self, self._on_call, route_alarm_id(key), self.api.api_id, key, threshold)
            )
        stage = self.stage.node.default_child
        assert isinstance(stage, apigw.CfnStage)
        stage.add_property_override("RouteSettings", dict(self._route_settings))

    def _failure_alarms(self, env: Environment, on_call: OnCall) -> None:
        """A 5xx from the door means Meta retries and, if it keeps failing, disables the
        subscription; a 5xx from the jobs API means a producer's request was not taken."""
        namespace = metrics_namespace(env)
        self.failure_alarms = []
        for service, metric, reasons in (
            ("ingress", metric_names.WEBHOOK_FAILED, metric_names.WebhookFailure.ALL),
            ("jobs", metric_names.JOB_FAILED, metric_names.JobFailure.ALL),
        ):
            for reason in reasons:
                self.failure_alarms.append(
                    on_call.alarm(
                        self,
                        f"{metric}{''.join(part.capitalize() for part in reason.split('_'))}",
                        notice=Notice.EVENT,
                        metric=cloudwatch.Metric(
                            namespace=namespace,
                            metric_name=metric,
                            dimensions_map={metric_names.REASON: reason, "service": service},
                            period=on_call.period(),
                            statistic="Sum",
                        ),
                        threshold=1,
                        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                        evaluation_periods=1,
                        description=f"{service} answered 5xx ({reason}). See docs/RUNBOOK.md#door-failures.",
                    )
                )

    @property
    def url(self) -> str:
        return self.stage.url

    @property
    def webhook_url(self) -> str:
        """The callback URL to give Meta: the function URL's, or the API's, with the webhook's path
        (a function URL takes any path; the same one keeps the two doors interchangeable)."""
        if self.function_url is not None:
            # The function URL ends in "/", the path starts with one.
            return self.function_url.url + WEBHOOK_PATH.lstrip("/")
        return self.stage.url + WEBHOOK_PATH.lstrip("/")
