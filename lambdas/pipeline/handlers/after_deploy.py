"""CloudFormation's custom resource that runs last in a deploy (stacks/constructs/after_deploy.py):
it turns on the tables' deletion protection and stops again the mapping of every paused lane
(stacks/constructs/after_deploy.py says why neither is the template's; the pause rule is
domain/dependencies/pause_keeping.py).

Its inputs are the resource's properties, which the stack writes: `Tables` (the tables to protect;
none where the environment does not keep its data), `StateTable` (the pause marks) and `Mappings`
(each lane's mapping id). A create that fails here undoes the protection it set, so the rollback
can delete the tables; a delete (the stack's, or the resource's) changes nothing: protection and
pauses stay.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from pipeline import settings
from pipeline.adapters import cfn_response
from pipeline.adapters.clients import Clients
from pipeline.adapters.lane_switch import LaneMappings
from pipeline.adapters.observability import logger_for
from pipeline.adapters.pause_marks import PauseMarks
from pipeline.adapters.table_protection import set_protection
from pipeline.domain.dependencies.pause_keeping import lanes_to_pause_again

SERVICE = "after-deploy"

Handler = Callable[[Any, Any], dict[str, Any]]
Respond = Callable[[dict[str, Any], str, str, str], None]


def create_handler(
    environ: Mapping[str, str],
    *,
    clients: Clients | None = None,
    respond: Respond = cfn_response.respond,
    clock: Callable[[], float] = time.time,
) -> Handler:
    clients = clients or Clients(region=settings.region(environ), credentials=settings.credentials(environ))
    logger = logger_for(environ, SERVICE)
    mappings = LaneMappings(clients.get("lambda"))

    def pause_again(properties: Mapping[str, Any]) -> list[str]:
        lanes: dict[str, str] = dict(properties.get("Mappings") or {})
        marks = PauseMarks(clients.dynamodb, str(properties["StateTable"]), clock).read(lanes)
        states = {lane: mappings.state(lanes[lane]).state for lane in marks}
        again = lanes_to_pause_again(marks, states)
        for lane in again:
            mappings.stop(lanes[lane])
        return again

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        del context
        kind = event["RequestType"]
        physical = str(event.get("PhysicalResourceId") or f"{event['LogicalResourceId']}-{SERVICE}")
        if kind == "Delete":
            respond(event, cfn_response.SUCCESS, "nothing undone: protection and pauses stay", physical)
            return {}
        properties = event.get("ResourceProperties") or {}
        protected: list[str] = []
        try:
            for table in properties.get("Tables") or []:
                if set_protection(clients.dynamodb, str(table), enabled=True):
                    protected.append(str(table))
            paused = pause_again(properties)
        except Exception as exc:
            if kind == "Create":
                # The rollback deletes the tables, which protection would refuse
                try:
                    for table in protected:
                        set_protection(clients.dynamodb, table, enabled=False)
                except Exception:
                    logger.exception("could not undo the protection set", extra={"protected": protected})
            logger.exception("after deploy failed", extra={"request": kind, "protected": len(protected)})
            respond(event, cfn_response.FAILED, f"{type(exc).__name__}: {exc}", physical)
            return {}
        logger.info("after deploy", extra={"request": kind, "protected": protected, "paused_again": paused})
        respond(event, cfn_response.SUCCESS, f"protected {len(protected)} table(s), paused {paused}", physical)
        return {"protected": protected, "paused_again": paused}

    return handle


@functools.cache
def _handler() -> Handler:
    return create_handler(os.environ)


def handler(event: Any, context: Any) -> dict[str, Any]:
    return _handler()(event, context)
