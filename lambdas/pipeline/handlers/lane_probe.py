"""Scheduled lane probe: resumes, on the paced ramp, a lane whose consumer paused itself, once the
dependency that stopped it answers again (domain/dependencies/lane_probe.py has the rule).

It runs on its own function and schedule, never on a lane it watches: a lane that paused itself
takes no work, so nothing on it could ever resume it. Each run reads every watched lane's pause mark
(one BatchGetItem); only a lane its consumer paused costs more: its mapping read, one cheap call to
the dependency that stopped it (adapters/dependency_checks.py), and when that answers, one mapping
update a step up the ramp. A lane an operator paused (`lanectl lane pause`) is left alone, even when
they paused it while the probe was checking its dependency: the mark is read again, consistently,
just before the mapping is raised (an operator's mark there: nothing is raised) and just after (an
operator's mark there: the mapping is stopped again, since their pause found it stopped and left it).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pipeline import metric_names, settings
from pipeline.adapters.clients import Clients
from pipeline.adapters.dependency_checks import MetaTokenCheck, ModelCheck, probe_converse_client
from pipeline.adapters.lane_switch import LaneMappings
from pipeline.adapters.observability import MetricUnit, logger_for, metrics_for
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.domain.dependencies import lane_probe as rules
from pipeline.domain.dependencies.lane_pause import BY_LANE, BY_OPERATOR, DEPENDENCY_OF, META, MODEL, PauseMark
from pipeline.settings.lane_probe import ProbedLane

SERVICE = "lane-probe"

Handler = Callable[[Any, Any], dict[str, Any]]


class Check(Protocol):
    def check(self) -> str | None: ...


def create_handler(
    environ: Mapping[str, str],
    *,
    clock: Callable[[], float] = time.time,
    clients: Clients | None = None,
) -> Handler:
    probe = settings.probe(environ)
    tables = settings.Tables.from_environ(environ)
    keys = settings.credentials(environ)
    clients = clients or Clients(region=settings.region(environ), credentials=keys)
    logger = logger_for(environ, SERVICE)
    metrics = metrics_for(environ, SERVICE)
    marks = PauseMarks(clients.dynamodb, tables.state, clock)
    mappings = LaneMappings(clients.get("lambda"))
    checks = _checks(environ, probe.lanes, clients, keys)

    def count(name: str, lane: str) -> None:
        metrics.add_dimension(metric_names.LANE, lane)
        metrics.add_metric(name, MetricUnit.Count, 1)
        metrics.flush_metrics()

    def step(lane: ProbedLane, mark: PauseMark) -> dict[str, Any]:
        mapping = mappings.state(lane.mapping_id)
        verdict = rules.verdict(mark, mapping, lane.max_concurrency)
        line: dict[str, Any] = {"lane": lane.name, "reason": mark.reason, "mapping": mapping.state}
        if verdict == rules.LEAVE:
            return {**line, "action": "wait"}
        if verdict == rules.FINISH:
            if marks.ramp_ended(mark):
                count(metric_names.LANE_RESUMED, lane.name)
            return {**line, "action": "resumed", "level": mapping.concurrency}
        failing = {
            dependency: reason
            for dependency in _dependencies(lane, mark.reason)
            if (reason := checks[(lane.name, dependency)].check()) is not None
        }
        if failing:
            count(metric_names.PROBE_FAILED, lane.name)
            return {**line, "action": "still_paused", "failing": failing}
        level = rules.next_step(mapping, lane.max_concurrency, probe.ramp_seconds, probe.period_seconds)
        # The check took seconds, in which an operator may have paused the lane (their mark
        # replaces the lane's): resume only while the mark read at the start is still there.
        current = marks.current(lane.name)
        if current != mark:
            return {**line, "action": "left", "by": current.by if current else None}
        mappings.run_at(lane.mapping_id, level)
        # An operator's pause landing between that read and the resume finds the mapping still
        # stopped and writes nothing more: the lane is stopped again for them here.
        current = marks.current(lane.name)
        if current is not None and current.by == BY_OPERATOR:
            mappings.stop(lane.mapping_id)
            return {**line, "action": "left", "by": current.by}
        if level >= lane.max_concurrency and marks.ramp_ended(mark):
            count(metric_names.LANE_RESUMED, lane.name)
            return {**line, "action": "resumed", "level": level}
        return {**line, "action": "ramp_step", "level": level, "of": lane.max_concurrency}

    def handle(event: Any, context: Any) -> dict[str, Any]:
        found = marks.read(lane.name for lane in probe.lanes)
        report = []
        for lane in probe.lanes:
            mark = found.get(lane.name)
            if mark is None:
                continue
            if mark.by != BY_LANE:
                report.append({"lane": lane.name, "action": "left", "by": mark.by})
                continue
            try:
                line = step(lane, mark)
            except Exception as exc:  # one lane's trouble must not keep the others paused
                logger.exception("lane probe failed on a lane", extra={"lane": lane.name})
                line = {"lane": lane.name, "action": "error", "error_class": type(exc).__name__}
                count(metric_names.PROBE_FAILED, lane.name)
            report.append(line)
            logger.info("lane probed", extra=line)
        return {"lanes": report}

    return handle


def _dependencies(lane: ProbedLane, reason: str) -> tuple[str, ...]:
    """What to retry: the dependency that stopped the lane, or every one it has if the reason names none."""
    has = (*((MODEL,) if lane.model_id else ()), *((META,) if lane.sends else ()))
    named = DEPENDENCY_OF.get(reason)
    return (named,) if named in has else has


def _checks(
    environ: Mapping[str, str], lanes: tuple[ProbedLane, ...], clients: Clients, keys: Any
) -> dict[tuple[str, str], Check]:
    found: dict[tuple[str, str], Check] = {}
    converse = probe_converse_client(settings.region(environ), keys) if any(lane.model_id for lane in lanes) else None
    url, token = environ.get(settings.EnvVar.GRAPH_API_URL), environ.get(settings.EnvVar.ACCESS_TOKEN_ARN)
    for lane in lanes:
        if lane.model_id and converse is not None:
            found[(lane.name, MODEL)] = ModelCheck(converse, lane.model_id)
        if lane.sends and url and token:
            found[(lane.name, META)] = MetaTokenCheck(url, clients.secretsmanager, token)
    return found


@functools.cache
def _default() -> Handler:
    return create_handler(os.environ)


def handler(event: Any, context: Any) -> dict[str, Any]:
    return _default()(event, context)
