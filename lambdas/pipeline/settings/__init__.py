"""The typed settings the stack decides and the functions act on, and their reading at cold start.

One type per setting, from the catalogue to the cold start: the stack's config holds these types
(a `Lane` holds its `LanePolicy`, an environment its `WebhookSettings`, its `JobsSettings` and
`SweeperSettings`, beside what only the stack needs), constructing one checks it
(so a bad catalogue fails `cdk synth`), the stack writes it into a function's environment with
`codec.dumps` (stacks/runtime_env.py), and the function reads it back with `codec.loads`, through
the readers here, from the mapping it is given (`os.environ` on Lambda, the template's variables
in the local runtime); nothing reads the process environment anywhere else. Domain code receives
these objects and never parses the environment. Nothing here imports the domain.

- `codec.py`: the one codec that writes and reads every settings type
- `lane_policy.py`: a lane's policy (budgets, retries, deadlines, tenant caps); `budget_mode.py`
  enforce or observe; `sweeper_policy.py`: the sweeper's; `callers.py`, `tenant_ids.py`: which
  principal acts for which tenant, and what a tenant id may be; `tenant_assets.py`: which Meta
  assets (phone-number ids, Pages, Instagram accounts) each tenant owns, and what a Meta id may be
- `environ.py`: the variable names, required and JSON values, tables, queue URLs
- `lane_settings.py`: reading lane policies, dependency budgets and the consumer's settings
- `kept.py`: retention periods and reading the sweeper's policy
- `model.py`: the model a lane's task calls
- `doors.py`: the webhook's, the jobs API's and the erasure callback's settings
- `readers.py`: each of these read back from the variable the stack wrote it into
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name is read from its module on first use, so a function imports only the settings it reads:
# the webhook door's cold start would otherwise load every lane's, the sweeper's and the model's
# settings types, and the policies behind them, for nothing.
_HOME = {
    "LanePolicy": "pipeline.settings.lane_policy",
    "SweeperSettings": "pipeline.settings.sweeper_policy",
    "ProbeSettings": "pipeline.settings.lane_probe",
    **dict.fromkeys(
        ("SECRET_CACHE_SECONDS", "ErasureSettings", "JobsSettings", "WebhookSettings"), "pipeline.settings.doors"
    ),
    **dict.fromkeys(
        (
            "account_silence",
            "auto_reply_settings",
            "erasure",
            "jobs",
            "probe",
            "retention",
            "sweeper",
            "asset_binding",
            "webhook",
        ),
        "pipeline.settings.readers",
    ),
    **dict.fromkeys(
        (
            "Credentials",
            "EnvVar",
            "SettingsError",
            "Tables",
            "credentials",
            "lane_queues",
            "region",
            "require",
            "section",
        ),
        "pipeline.settings.environ",
    ),
    "RetentionSettings": "pipeline.settings.kept",
    **dict.fromkeys(
        ("ConsumerSettings", "dependencies", "lane", "lane_objectives", "lanes"), "pipeline.settings.lane_settings"
    ),
    "DependencyBudget": "pipeline.settings.dependency_budget",
    "ModelSettings": "pipeline.settings.model",
    "AssetBinding": "pipeline.settings.tenant_assets",
    "AutoReplySettings": "pipeline.settings.auto_reply",
}

__all__ = [
    "SECRET_CACHE_SECONDS",
    "AssetBinding",
    "AutoReplySettings",
    "ConsumerSettings",
    "Credentials",
    "DependencyBudget",
    "EnvVar",
    "ErasureSettings",
    "JobsSettings",
    "LanePolicy",
    "ModelSettings",
    "ProbeSettings",
    "RetentionSettings",
    "SettingsError",
    "SweeperSettings",
    "Tables",
    "WebhookSettings",
    "account_silence",
    "asset_binding",
    "auto_reply_settings",
    "credentials",
    "dependencies",
    "erasure",
    "jobs",
    "lane",
    "lane_queues",
    "lanes",
    "probe",
    "region",
    "require",
    "retention",
    "section",
    "sweeper",
    "webhook",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from pipeline.settings.auto_reply import AutoReplySettings
    from pipeline.settings.dependency_budget import DependencyBudget
    from pipeline.settings.doors import SECRET_CACHE_SECONDS, ErasureSettings, JobsSettings, WebhookSettings
    from pipeline.settings.environ import (
        Credentials,
        EnvVar,
        SettingsError,
        Tables,
        credentials,
        lane_queues,
        region,
        require,
        section,
    )
    from pipeline.settings.kept import RetentionSettings
    from pipeline.settings.lane_policy import LanePolicy
    from pipeline.settings.lane_probe import ProbeSettings
    from pipeline.settings.lane_settings import ConsumerSettings, dependencies, lane, lanes
    from pipeline.settings.model import ModelSettings
    from pipeline.settings.readers import (
        account_silence,
        asset_binding,
        auto_reply_settings,
        erasure,
        jobs,
        probe,
        retention,
        sweeper,
        webhook,
    )
    from pipeline.settings.sweeper_policy import SweeperSettings
    from pipeline.settings.tenant_assets import AssetBinding
