"""What each function is told by the template, parsed once per cold start into typed values.

The stack writes these variables (stacks/runtime_env.py); a handler builds its settings from the
mapping it is given (`os.environ` on Lambda, the template's variables in the local runtime) and
never reads the process environment anywhere else. Lane and sweeper policies are the types in
`pipeline.policy`, read with its codec; this package only finds and reads the variables.

- `environ.py`: the variable names, required and JSON values, tables, queue URLs
- `lane_settings.py`: lane policies and the consumer's settings
- `kept.py`: retention periods and the sweeper's policy
- `model.py`: the model a lane's task calls
- `doors.py`: the webhook's, the jobs API's and the erasure callback's settings
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name is read from its module on first use, so a function imports only the settings it reads:
# the webhook door's cold start would otherwise load every lane's, the sweeper's and the model's
# settings types, and the policies behind them, for nothing.
_HOME = {
    "LanePolicy": "pipeline.policy.lanes",
    "SweeperSettings": "pipeline.policy.sweeper",
    **dict.fromkeys(
        ("SECRET_CACHE_SECONDS", "ErasureSettings", "JobsSettings", "WebhookSettings", "erasure", "jobs", "webhook"),
        "pipeline.settings.doors",
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
    **dict.fromkeys(("RetentionSettings", "account_silence", "retention", "sweeper"), "pipeline.settings.kept"),
    **dict.fromkeys(
        ("ConsumerSettings", "DependencyBudget", "dependencies", "lane", "lanes"), "pipeline.settings.lane_settings"
    ),
    "ModelSettings": "pipeline.settings.model",
}

__all__ = [
    "SECRET_CACHE_SECONDS",
    "ConsumerSettings",
    "Credentials",
    "DependencyBudget",
    "EnvVar",
    "ErasureSettings",
    "JobsSettings",
    "LanePolicy",
    "ModelSettings",
    "RetentionSettings",
    "SettingsError",
    "SweeperSettings",
    "Tables",
    "WebhookSettings",
    "account_silence",
    "credentials",
    "dependencies",
    "erasure",
    "jobs",
    "lane",
    "lane_queues",
    "lanes",
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
    from pipeline.policy.lanes import LanePolicy
    from pipeline.policy.sweeper import SweeperSettings
    from pipeline.settings.doors import (
        SECRET_CACHE_SECONDS,
        ErasureSettings,
        JobsSettings,
        WebhookSettings,
        erasure,
        jobs,
        webhook,
    )
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
    from pipeline.settings.kept import RetentionSettings, account_silence, retention, sweeper
    from pipeline.settings.lane_settings import ConsumerSettings, DependencyBudget, dependencies, lane, lanes
    from pipeline.settings.model import ModelSettings
