"""Lane policies as the functions are given them, and the consumer's whole deployment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.settings.dependency_budget import DependencyBudget
from pipeline.settings.environ import EnvVar, SettingsError, Tables, policies, policy, region, require, section
from pipeline.settings.kept import RetentionSettings
from pipeline.settings.lane_policy import LaneCapacity, LanePolicy
from pipeline.settings.model import ModelSettings
from pipeline.settings.readers import model, retention


def lanes(environ: Mapping[str, str]) -> dict[str, LaneCapacity]:
    """Every lane's capacity, by name (the jobs API)."""
    return policies(environ, EnvVar.LANES, LaneCapacity)


def lane_objectives(environ: Mapping[str, str]) -> dict[str, int]:
    """Every lane's objective in seconds, by name (the sweeper)."""
    raw = section(environ, EnvVar.LANE_OBJECTIVES)
    bad = sorted(name for name, seconds in raw.items() if not isinstance(seconds, int) or seconds <= 0)
    if bad:
        raise SettingsError(f"{EnvVar.LANE_OBJECTIVES}: objectives must be whole seconds > 0: {', '.join(bad)}")
    return {str(name): int(seconds) for name, seconds in raw.items()}


def lane(environ: Mapping[str, str]) -> LanePolicy:
    return policy(environ, EnvVar.LANE, LanePolicy)


def dependencies(environ: Mapping[str, str]) -> dict[str, DependencyBudget]:
    return policies(environ, EnvVar.DEPENDENCIES, DependencyBudget)


@dataclass(frozen=True)
class ConsumerSettings:
    """Everything a lane consumer is deployed with (see stacks/runtime_env.consumer)."""

    lane: LanePolicy
    queue_url: str
    dlq_url: str
    dependencies: Mapping[str, DependencyBudget]
    idempotency_ttl_seconds: int
    tables: Tables
    region: str
    retention: RetentionSettings
    model: ModelSettings | None = None
    """The model its task calls, if any (pipeline/settings/model.py)."""
    send_per_second: int | None = None
    """Meta's messages a second per business phone number, on a lane that sends replies."""

    @property
    def dependency(self) -> DependencyBudget | None:
        """The shared budget this lane's task holds around its external calls, if any."""
        if self.lane.dependency is None:
            return None
        try:
            return self.dependencies[self.lane.dependency]
        except KeyError:
            raise SettingsError(
                f"lane {self.lane.name!r} uses dependency {self.lane.dependency!r}, "
                f"which {EnvVar.DEPENDENCIES} does not define"
            ) from None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ConsumerSettings:
        raw_ttl = require(environ, EnvVar.IDEMPOTENCY_TTL_SECONDS)
        try:
            ttl = int(raw_ttl)
        except ValueError:
            raise SettingsError(f"{EnvVar.IDEMPOTENCY_TTL_SECONDS} must be whole seconds, got {raw_ttl!r}") from None
        parsed = cls(
            lane=lane(environ),
            queue_url=require(environ, EnvVar.QUEUE_URL),
            dlq_url=require(environ, EnvVar.DLQ_URL),
            dependencies=dependencies(environ),
            idempotency_ttl_seconds=ttl,
            tables=Tables.from_environ(environ),
            region=region(environ),
            retention=retention(environ),
            model=model(environ),
            send_per_second=_send_per_second(environ),
        )
        _ = parsed.dependency  # a lane naming an undefined dependency fails the cold start, loudly
        return parsed


def _send_per_second(environ: Mapping[str, str]) -> int | None:
    raw = environ.get(EnvVar.SEND_PER_SECOND)
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{EnvVar.SEND_PER_SECOND} must be a whole number, got {raw!r}") from None
    if value < 3:
        raise SettingsError(f"{EnvVar.SEND_PER_SECOND} must be >= 3, got {value}")
    return value
