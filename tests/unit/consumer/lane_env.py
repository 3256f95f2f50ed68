"""A test lane's settings and messages: its consumer environment with some policy changed, a
tenant quota or dependency budget to give it, and an internal envelope for it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ops.drive.lane_changes import changed_lane
from pipeline.domain.envelope import Envelope
from pipeline.settings import codec
from pipeline.settings.dependency_budget import DependencyBudget
from pipeline.settings.lane_policy import BudgetMode, TenantQuota


def with_lane(environ: Mapping[str, str], **changes: Any) -> dict[str, str]:
    """The consumer environment with some of its lane policy's fields changed (typed values, as
    the catalogue writes them) and task `options` merged in."""
    return {**environ, "LANE": changed_lane(environ["LANE"], **changes)}


def without_auto_reply_debounce(environ: Mapping[str, str]) -> dict[str, str]:
    """A messages lane environment whose auto-reply turns run at once rather than one debounce out
    (tasks/auto_reply.py), so one drain answers them; unchanged where the lane does not auto-reply."""
    if "AUTO_REPLY" not in environ:
        return dict(environ)
    return {**environ, "AUTO_REPLY": json.dumps({**json.loads(environ["AUTO_REPLY"]), "debounce_seconds": 0})}


def tenant_cap(limit: int, mode: str = "enforce") -> TenantQuota:
    """A tenant quota for a test lane (the catalogue names what each real one protects)."""
    return TenantQuota(limit, "a partner's per-tenant limit", BudgetMode(mode))


def with_dependency(
    environ: Mapping[str, str], name: str, *, limit: int, mode: str = "enforce", requests_per_minute: int | None = None
) -> dict[str, str]:
    dependencies = json.loads(environ["DEPENDENCIES"])
    budget = DependencyBudget(
        name, limit=limit, vendor_quota=limit, mode=BudgetMode(mode), requests_per_minute=requests_per_minute
    )
    dependencies[name] = codec.to_plain(budget)
    return {**environ, "DEPENDENCIES": json.dumps(dependencies)}


def internal(
    lane: str,
    work_id: str,
    kind: str,
    payload: Any,
    *,
    tenant: str = "system",
    created_at: float | None = None,
    deadline: float | None = None,
) -> Envelope:
    return Envelope(
        id=work_id,
        lane=lane,
        tenant=tenant,
        kind=kind,
        source="internal",
        created_at=created_at if created_at is not None else time.time(),
        deadline=deadline,
        payload=payload,
    )
