"""The local runtime's parts, read from the deployed template: a host per function, a player per
event source mapping (and the lanes they serve), the API's routes, the schedules and the alarms.
local_aws/runtime.py starts them; nothing here starts a thread."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3

from local_aws import lambda_control
from local_aws.alarms import AlarmDefinition, AlarmRule
from local_aws.api import Route, route_throttles
from local_aws.capture import OutputCapture
from local_aws.deploy import ACCOUNT, REGION, Deployment, is_alarm_rule
from local_aws.functions import FunctionConfig, FunctionHost
from local_aws.iam import played
from local_aws.iam.enforcer import ENFORCER
from local_aws.intrinsics import references
from local_aws.log_filters import MetricFilter
from local_aws.mappings import MappingPlayer
from local_aws.metrics import MetricsStore
from local_aws.schedules import ScheduledRule, period_seconds
from pipeline.settings import EnvVar
from stacks.config.environments import Environment
from stacks.runtime_env import lane_id

RETENTION_VARIABLE = EnvVar.RETENTION
GRAPH_VARIABLE = EnvVar.GRAPH_API_URL


@dataclass
class LaneView:
    """What the runtime knows about one lane, by the stack's output names."""

    name: str
    queue_url: str
    dlq_url: str
    function: FunctionHost
    player: MappingPlayer
    alarms: list[AlarmDefinition] = field(default_factory=list)

    @property
    def queue_name(self) -> str:
        return self.queue_url.rsplit("/", 1)[1]

    @property
    def dlq_name(self) -> str:
        return self.dlq_url.rsplit("/", 1)[1]


def host_functions(deployment: Deployment, capture: OutputCapture, metrics: MetricsStore) -> dict[str, FunctionHost]:
    hosts = {}
    for logical_id in deployment.resources("AWS::Lambda::Function"):
        name = deployment.physical[logical_id]
        configuration = lambda_control.function_configuration(name)
        hosts[logical_id] = FunctionHost(FunctionConfig.from_moto(configuration), capture=capture, metrics=metrics)
    return hosts


def metric_filters(deployment: Deployment) -> dict[str, list[MetricFilter]]:
    """Each function's log-group metric filters, by the function's name: the lines it prints are
    what its log group ingests."""
    by_group: dict[str, list[MetricFilter]] = {}
    for properties in (r["Properties"] for r in deployment.resources("AWS::Logs::MetricFilter").values()):
        group = _referenced(properties["LogGroupName"])
        by_group.setdefault(group, []).extend(MetricFilter.from_properties(deployment.resolve(properties)))
    found: dict[str, list[MetricFilter]] = {}
    for logical_id, function in deployment.resources("AWS::Lambda::Function").items():
        group = function["Properties"].get("LoggingConfig", {}).get("LogGroup")
        if group is not None and _referenced(group) in by_group:
            found[deployment.physical[logical_id]] = by_group[_referenced(group)]
    return found


def _referenced(value: Any) -> str:
    if isinstance(value, Mapping) and "Ref" in value:
        return str(value["Ref"])
    raise ValueError(f"a log group named by {value!r}: the runtime follows Ref only")


def shorten_retention(deployment: Deployment, lambda_client: Any, seconds: int) -> None:
    """Tell every function that stamps expiries to keep data `seconds`, as a deploy of an
    environment with that retention would (the function configuration shows it)."""
    for logical_id in deployment.resources("AWS::Lambda::Function"):
        name = deployment.physical[logical_id]
        variables = dict((lambda_control.function_configuration(name).get("Environment") or {}).get("Variables", {}))
        if RETENTION_VARIABLE not in variables:
            continue
        periods = json.loads(variables[RETENTION_VARIABLE])
        variables[RETENTION_VARIABLE] = json.dumps(dict.fromkeys(periods, seconds))
        lambda_client.update_function_configuration(FunctionName=name, Environment={"Variables": variables})


def point_at_graph(deployment: Deployment, lambda_client: Any, url: str) -> int:
    """Point every function that sends through Meta at the local Graph API (local_aws/graph_fake.py),
    as a deploy with that URL would; returns how many it changed."""
    changed = 0
    for logical_id in deployment.resources("AWS::Lambda::Function"):
        name = deployment.physical[logical_id]
        variables = dict((lambda_control.function_configuration(name).get("Environment") or {}).get("Variables", {}))
        if GRAPH_VARIABLE not in variables:
            continue
        variables[GRAPH_VARIABLE] = url
        lambda_client.update_function_configuration(FunctionName=name, Environment={"Variables": variables})
        changed += 1
    return changed


def role_client(service: str, config: FunctionConfig) -> Any:
    """A client signing with a session of the function's role: what the Lambda service uses for
    the function's event source mappings."""
    credentials = ENFORCER.assume(config.role, config.name)
    return boto3.session.Session(
        region_name=REGION,
        aws_access_key_id=credentials.access_key_id,
        aws_secret_access_key=credentials.secret_access_key,
        aws_session_token=credentials.session_token,
    ).client(service)  # type: ignore[call-overload]


def log_refusals(deployment: Deployment, functions: dict[str, FunctionHost]) -> list[str]:
    """Functions whose role may not write their own log group (Lambda would lose their lines)."""
    found = []
    for logical_id, resource in deployment.resources("AWS::Lambda::Function").items():
        group = resource["Properties"].get("LoggingConfig", {}).get("LogGroup")
        config = functions[logical_id].config
        if group is None or not config.role:
            continue
        arn = deployment.resolve({"Fn::GetAtt": [_referenced(group), "Arn"]})
        refused = played.logs_refusal(config.role, config.name, arn)
        if refused:
            found.append(refused)
    return found


def function_by_arn(functions: dict[str, FunctionHost], arn: str) -> FunctionHost:
    for host in functions.values():
        if host.config.arn == arn or host.config.name == arn.rsplit(":", 1)[-1]:
            return host
    raise KeyError(f"no function {arn}")


def queue_url(sqs_client: Any, arn: str) -> str:
    return str(sqs_client.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"])


def queue_names(deployment: Deployment) -> list[str]:
    return [url.rsplit("/", 1)[1] for url in (deployment.physical[k] for k in deployment.resources("AWS::SQS::Queue"))]


def mapping_players(
    deployment: Deployment, functions: dict[str, FunctionHost], clients: dict[str, Any], on_error: Callable[[str], None]
) -> list[MappingPlayer]:
    """One poller per mapping, polling with the function's role as Lambda does (played.py)."""
    players = []
    for logical_id, resource in deployment.resources("AWS::Lambda::EventSourceMapping").items():
        properties = deployment.resolve(resource["Properties"])
        queue_arn = properties["EventSourceArn"]
        function = function_by_arn(functions, properties["FunctionName"])
        played.check_mapping(function.config.role, function.config.name, queue_arn)
        players.append(
            MappingPlayer(
                uuid=deployment.physical[logical_id],
                queue_url=queue_url(clients["sqs"], queue_arn),
                queue_arn=queue_arn,
                function=function,
                lambda_client=clients["lambda"],
                sqs_client=role_client("sqs", function.config),
                on_error=on_error,
                read_mapping=lambda_control.mapping_configuration,
            )
        )
    return players


def lane_views(env: Environment, outputs: dict[str, str], players: list[MappingPlayer]) -> dict[str, LaneView]:
    lanes = {}
    for lane in env.lanes:
        prefix = lane_id(lane.name)
        (player,) = [p for p in players if p.uuid == outputs[f"{prefix}MappingId"]]
        lanes[lane.name] = LaneView(
            name=lane.name,
            queue_url=outputs[f"{prefix}QueueUrl"],
            dlq_url=outputs[f"{prefix}DlqUrl"],
            function=player.function,
            player=player,
        )
    return lanes


def api_routes(
    deployment: Deployment, functions: dict[str, FunctionHost], route_settings: Mapping[str, Any] | None = None
) -> list[Route]:
    """The stage's routes, each throttled by its route settings; `route_settings` (by route key,
    as the stage's RouteSettings) changes some for this run, as an UpdateStage would."""
    integrations = deployment.resources("AWS::ApiGatewayV2::Integration")
    (stage,) = deployment.resources("AWS::ApiGatewayV2::Stage").values()
    properties = stage["Properties"]
    throttle_for = route_throttles(
        {**properties, "RouteSettings": {**(properties.get("RouteSettings") or {}), **(route_settings or {})}}
    )

    routes = []
    for resource in deployment.resources("AWS::ApiGatewayV2::Route").values():
        properties = resource["Properties"]
        (integration_id,) = references(properties["Target"]) & set(integrations)
        uri = deployment.resolve(integrations[integration_id]["Properties"]["IntegrationUri"])
        method, path = properties["RouteKey"].split(" ", 1)
        routes.append(
            Route(
                method=method,
                path=path,
                function=function_by_arn(functions, uri),
                iam=properties.get("AuthorizationType") == "AWS_IAM",
                throttle=throttle_for(properties["RouteKey"]),
            )
        )
    return routes


def scheduled_rules(deployment: Deployment) -> list[ScheduledRule]:
    rules = []
    for logical_id, resource in deployment.resources("AWS::Events::Rule").items():
        if "ScheduleExpression" not in resource["Properties"]:
            continue
        targets = deployment.resolve(resource["Properties"].get("Targets", []))
        arn = deployment.resolve({"Fn::GetAtt": [logical_id, "Arn"]})
        rules.append(ScheduledRule(logical_id, arn, period_seconds(resource), targets))
    return rules


def alarm_definitions(deployment: Deployment) -> list[AlarmDefinition]:
    definitions = {
        logical_id: AlarmDefinition.from_template(
            logical_id, deployment.resolve(resource["Properties"]), deployment.app.stack_name
        )
        for logical_id, resource in deployment.resources("AWS::CloudWatch::Alarm").items()
    }
    for logical_id, resource in deployment.resources("AWS::Events::Rule").items():
        if not is_alarm_rule(resource):
            continue
        pattern = resource["Properties"]["EventPattern"]
        # Named as CloudFormation names an unnamed rule, without its suffix (as alarms are here)
        arn = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{deployment.app.stack_name}-{logical_id}"
        targets = [str(deployment.resolve(t["Arn"])) for t in resource["Properties"].get("Targets", [])]
        for watched in pattern.get("resources", []):
            alarm = definitions[watched["Fn::GetAtt"][0]]
            alarm.rules.append(AlarmRule(arn, pattern.get("detail", {}), targets))
    return list(definitions.values())
