"""The environment each function is deployed with, written in one place.

The stack calls these with CDK tokens for resource names; tests and the local runtime call them
with real names. Either way the handlers parse the result with `pipeline.settings`, so what the
template says and what the code reads cannot drift apart. Lane and sweeper policies, and the
doors', dependencies' and retention settings, are the functions' own types (pipeline/settings),
which the environment's config holds, written with the policy codec: the stack spells no key of
them here. No CDK import here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pipeline.domain.erasure import requests as erasure_rules
from pipeline.domain.webhook.routing import WEBHOOK_LANES
from pipeline.settings import (
    EnvVar,
    ErasureSettings,
    RetentionSettings,
    codec,
)
from pipeline.settings.lane_policy import LaneCapacity
from pipeline.settings.lane_probe import ProbedLane, ProbeSettings
from stacks.config.environments import Environment
from stacks.config.lanes import Lane
from stacks.config.privacy import DAY

Dumps = Callable[[Any], str]

PERIOD_METADATA = "lanes:periodSeconds"
"""Metadata on a scheduled rule holding its true period. EventBridge's smallest rate is one
minute; the local environment's clock runs in seconds, and its runtime reads this instead."""


@dataclass(frozen=True)
class Resources:
    webhook_table: str
    jobs_table: str
    state_table: str
    data_table: str
    queue_urls: Mapping[str, str]
    dlq_urls: Mapping[str, str]
    secret_arn: str
    sender_key_arn: str
    access_token_arn: str = ""
    """Meta's access token for sending replies (the lanes in SENDING_LANES are given it)."""
    callback_key_arn: str = ""
    """The key replies' references are signed with (the lanes in SIGNING_TASKS are given it)."""
    accounts_table: str = ""
    """Source accounts' last-seen items (the door and the sweeper, where accounts are watched)."""
    jobs_callers_arn: str = ""
    """The jobs API's callers (`jobs_callers`), kept out of its environment."""


def stack_name(env: Environment) -> str:
    return f"lanes-{env.name}"


def lane_id(lane_name: str) -> str:
    """`messages` → `Messages`: the prefix of a lane's logical IDs and stack outputs."""
    return "".join(part.capitalize() for part in lane_name.replace("-", "_").split("_"))


def metrics_namespace(env: Environment) -> str:
    return f"Lanes/{env.name}"


def _common(env: Environment, resources: Resources, service: str) -> dict[str, str]:
    return {
        EnvVar.ENV_NAME: env.name,
        EnvVar.SERVICE_NAME: service,
        EnvVar.METRICS_NAMESPACE: metrics_namespace(env),
        EnvVar.WEBHOOK_TABLE: resources.webhook_table,
        EnvVar.JOBS_TABLE: resources.jobs_table,
        EnvVar.STATE_TABLE: resources.state_table,
        EnvVar.DATA_TABLE: resources.data_table,
        "LOG_LEVEL": "INFO",
    }


def _capacities(env: Environment) -> str:
    return codec.dumps({lane.name: LaneCapacity.of(lane.policy) for lane in env.lanes})


def _objectives(env: Environment) -> str:
    return codec.dumps({lane.name: lane.policy.objective_seconds for lane in env.lanes})


def _dependencies(env: Environment) -> str:
    return codec.dumps({d.name: d for d in env.dependencies})


def _retention(env: Environment) -> dict[str, str]:
    return {EnvVar.RETENTION: codec.dumps(RetentionSettings(**env.retention.seconds()))}


def _account_silence(env: Environment, resources: Resources) -> dict[str, str]:
    if env.accounts is None:
        return {}
    return {
        EnvVar.ACCOUNT_SILENCE: codec.dumps(env.accounts.silence),
        EnvVar.ACCOUNTS_TABLE: resources.accounts_table,
    }


def ingress(env: Environment, resources: Resources, dumps: Dumps) -> dict[str, str]:
    return {
        **_common(env, resources, "ingress"),
        **_account_silence(env, resources),
        **_retention(env),
        EnvVar.SENDER_KEY_ARN: resources.sender_key_arn,
        # Only the lanes the door routes to: it reads no other lane's queue.
        EnvVar.LANE_QUEUES: dumps({lane: url for lane, url in resources.queue_urls.items() if lane in WEBHOOK_LANES}),
        EnvVar.META_SECRET_ARN: resources.secret_arn,
        EnvVar.WEBHOOK: codec.dumps(
            replace(env.webhook, client_subject=None if env.mutual_tls is None else env.mutual_tls.client_subject)
        ),
    }


def jobs_callers(env: Environment) -> str:
    """The jobs API's callers as their secret holds them: {principal: [tenant, ...]}."""
    return json.dumps({principal: list(tenants) for principal, tenants in sorted(env.jobs.settings.callers.items())})


def jobs(env: Environment, resources: Resources, dumps: Dumps) -> dict[str, str]:
    callers = jobs_callers(env)
    return {
        **_common(env, resources, "jobs"),
        **_retention(env),
        EnvVar.SENDER_KEY_ARN: resources.sender_key_arn,
        EnvVar.LANES: _capacities(env),
        EnvVar.LANE_QUEUES: dumps(dict(resources.queue_urls)),
        EnvVar.JOBS: codec.dumps(replace(env.jobs.settings, callers={})),
        EnvVar.JOBS_CALLERS_ARN: resources.jobs_callers_arn,
        EnvVar.JOBS_CALLERS_DIGEST: hashlib.sha256(callers.encode()).hexdigest()[:16],
        EnvVar.TENANT_ASSETS: env.tenant_assets.to_text(),
    }


SENDING_TASKS = frozenset({"ai"})
"""Tasks that send replies through Meta (tasks/replies.py): their lanes get the Graph API's URL,
the access token's secret and which assets each tenant owns (TENANT_ASSETS: no other function
reads it, and Lambda allows 4 KB of variables a function)."""


STATUS_TASKS = frozenset({"messages"})
"""Tasks that apply WhatsApp's statuses (tasks/messages.py): those of replies resolve them."""

SIGNING_TASKS = SENDING_TASKS | STATUS_TASKS
"""Tasks that sign replies' references (ai) or verify the ones statuses carry back (messages,
tasks/messages.py): their lanes get the reply callback key's secret."""


AUTO_REPLY_TASKS = frozenset({"messages"})
"""Tasks that turn a tenant's stored inbound messages into ai turns (tasks/auto_reply.py)."""
AUTO_REPLY_LANE = "ai"
"""Where those turns go: the ai lane (tasks/ai.py), whose queue the messages lane may send to."""


def auto_replies(env: Environment, lane: Lane) -> bool:
    """Whether `lane` starts ai turns itself: its task does, a tenant has auto-reply on, and the
    environment has an ai lane. Only then is it given the variables (and the grant) it needs."""
    return (
        lane.policy.task in AUTO_REPLY_TASKS
        and env.auto_reply.on_anywhere
        and any(other.name == AUTO_REPLY_LANE for other in env.lanes)
    )


def _auto_reply(env: Environment, lane: Lane, resources: Resources, dumps: Dumps) -> dict[str, str]:
    if not auto_replies(env, lane):
        return {}
    # One knob: the ai lane's `debounce_seconds` option, which its own stamps read, is copied into
    # the settings the messages lane reads (Environment refuses the settings' field set by hand).
    ai_lane = next(other for other in env.lanes if other.name == AUTO_REPLY_LANE)
    debounce = dict(ai_lane.policy.task_options).get("debounce_seconds")
    settings = env.auto_reply if debounce is None else replace(env.auto_reply, debounce_seconds=float(debounce))
    return {
        EnvVar.AUTO_REPLY: codec.dumps(settings),
        EnvVar.TENANT_ASSETS: env.tenant_assets.to_text(),
        EnvVar.LANE_QUEUES: dumps({AUTO_REPLY_LANE: resources.queue_urls[AUTO_REPLY_LANE]}),
    }


def consumer(env: Environment, lane: Lane, resources: Resources, dumps: Dumps) -> dict[str, str]:
    model = env.model(lane.name)
    sends = lane.policy.task in SENDING_TASKS and resources.access_token_arn
    signs = lane.policy.task in SIGNING_TASKS and resources.callback_key_arn
    return {
        **({EnvVar.CALLBACK_KEY_ARN: resources.callback_key_arn} if signs else {}),
        **(
            {
                EnvVar.GRAPH_API_URL: env.graph_api_url,
                EnvVar.ACCESS_TOKEN_ARN: resources.access_token_arn,
                EnvVar.SEND_PER_SECOND: str(env.meta_messages_per_second),
                EnvVar.TENANT_ASSETS: env.tenant_assets.to_text(),
            }
            if sends
            else {}
        ),
        **({EnvVar.MODEL: codec.dumps(model.settings)} if model is not None else {}),
        **_auto_reply(env, lane, resources, dumps),
        **_common(env, resources, f"consumer-{lane.name}"),
        **_retention(env),
        EnvVar.SENDER_KEY_ARN: resources.sender_key_arn,
        EnvVar.LANE: codec.dumps(lane.policy),
        EnvVar.QUEUE_URL: resources.queue_urls[lane.name],
        EnvVar.DLQ_URL: resources.dlq_urls[lane.name],
        EnvVar.DEPENDENCIES: _dependencies(env),
        EnvVar.IDEMPOTENCY_TTL_SECONDS: str(env.idempotency_ttl_seconds),
    }


def erasure(env: Environment, resources: Resources, dumps: Dumps) -> dict[str, str]:
    lane = erasure_rules.LANE
    return {
        **_common(env, resources, "erasure"),
        **_retention(env),
        EnvVar.SENDER_KEY_ARN: resources.sender_key_arn,
        EnvVar.META_SECRET_ARN: resources.secret_arn,
        EnvVar.LANE_QUEUES: dumps({lane: resources.queue_urls[lane]}),
        EnvVar.ERASURE: codec.dumps(
            ErasureSettings(
                lane=lane,
                queued_limit=env.jobs.settings.tenant_queued_limit,
                deadline_seconds=env.erasure.deadline_days * DAY,
                max_body_bytes=env.erasure.max_body_bytes,
                secret_cache_seconds=env.webhook.secret_cache_seconds,
                secret_refresh_seconds=env.webhook.secret_refresh_seconds,
                max_request_age_seconds=env.erasure.max_request_age_seconds,
            )
        ),
    }


def sweeper(env: Environment, resources: Resources, dumps: Dumps) -> dict[str, str]:
    return {
        **_common(env, resources, "sweeper"),
        **_account_silence(env, resources),
        EnvVar.LANE_OBJECTIVES: _objectives(env),
        EnvVar.LANE_QUEUES: dumps(dict(resources.queue_urls)),
        EnvVar.SWEEPER: codec.dumps(env.sweeper.settings),
    }


def after_deploy(env: Environment, resources: Resources) -> dict[str, str]:
    """The after-deploy guard's variables: it takes what it works on from its custom resource's
    properties (stacks/constructs/after_deploy.py), so only what every function has."""
    return _common(env, resources, "after-deploy")


def probed_lanes(env: Environment) -> list[Lane]:
    """The lanes that can pause themselves: those that call a model or send through Meta."""
    return [lane for lane in env.lanes if env.model(lane.name) is not None or lane.policy.task in SENDING_TASKS]


def lane_probe(env: Environment, resources: Resources, dumps: Dumps, mapping_ids: Mapping[str, str]) -> dict[str, str]:
    """The probe's variables; `mapping_ids` by lane (the stack's are tokens of its mappings)."""
    lanes = probed_lanes(env)
    sends = any(lane.policy.task in SENDING_TASKS for lane in lanes) and resources.access_token_arn
    settings = ProbeSettings(
        period_seconds=env.probe.period_seconds,
        ramp_seconds=env.probe.ramp_seconds,
        lanes=tuple(
            ProbedLane(
                name=lane.name,
                mapping_id=mapping_ids[lane.name],
                max_concurrency=lane.policy.max_concurrency,
                model_id=model.settings.model_id if (model := env.model(lane.name)) is not None else None,
                sends=lane.policy.task in SENDING_TASKS,
            )
            for lane in lanes
        ),
    )
    return {
        **_common(env, resources, "lane-probe"),
        **(
            {EnvVar.GRAPH_API_URL: env.graph_api_url, EnvVar.ACCESS_TOKEN_ARN: resources.access_token_arn}
            if sends
            else {}
        ),
        EnvVar.PROBE: dumps(codec.to_plain(settings)),
    }
