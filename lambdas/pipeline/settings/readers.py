"""Each typed setting read back from a function's environment, as the stack wrote it there
(stacks/runtime_env.py): one reader a variable, through the codec, so an unknown, missing or
mistyped key fails naming the variable and the field, and the type's own checks run on reading."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.settings.auto_reply import AutoReplySettings
from pipeline.settings.doors import ErasureSettings, JobsSettings, WebhookSettings
from pipeline.settings.environ import EnvVar, SettingsError, policy
from pipeline.settings.kept import RetentionSettings
from pipeline.settings.lane_probe import ProbeSettings
from pipeline.settings.model import ModelSettings
from pipeline.settings.silence_policy import AccountSilence
from pipeline.settings.sweeper_policy import SweeperSettings
from pipeline.settings.tenant_assets import AssetBinding


def webhook(environ: Mapping[str, str]) -> WebhookSettings:
    return policy(environ, EnvVar.WEBHOOK, WebhookSettings)


def account_silence(environ: Mapping[str, str]) -> AccountSilence | None:
    """The account-silence policy, or None where the environment watches no accounts."""
    if not environ.get(EnvVar.ACCOUNT_SILENCE):
        return None
    return policy(environ, EnvVar.ACCOUNT_SILENCE, AccountSilence)


def erasure(environ: Mapping[str, str]) -> ErasureSettings:
    return policy(environ, EnvVar.ERASURE, ErasureSettings)


def jobs(environ: Mapping[str, str]) -> JobsSettings:
    return policy(environ, EnvVar.JOBS, JobsSettings)


def sweeper(environ: Mapping[str, str]) -> SweeperSettings:
    return policy(environ, EnvVar.SWEEPER, SweeperSettings)


def probe(environ: Mapping[str, str]) -> ProbeSettings:
    return policy(environ, EnvVar.PROBE, ProbeSettings)


def retention(environ: Mapping[str, str]) -> RetentionSettings:
    return policy(environ, EnvVar.RETENTION, RetentionSettings)


def model(environ: Mapping[str, str]) -> ModelSettings | None:
    """The lane's model, or None for a lane deployed without one."""
    if not environ.get(EnvVar.MODEL):
        return None
    return policy(environ, EnvVar.MODEL, ModelSettings)


def asset_binding(environ: Mapping[str, str]) -> AssetBinding:
    """Which Meta assets each tenant owns; a function deployed without the variable binds none."""
    text = environ.get(EnvVar.TENANT_ASSETS)
    if not text:
        return AssetBinding()
    try:
        return AssetBinding.from_text(text)
    except ValueError as exc:
        raise SettingsError(f"{EnvVar.TENANT_ASSETS}: {exc}") from exc


def auto_reply_settings(environ: Mapping[str, str]) -> AutoReplySettings:
    """Which tenants' customers are answered without a product asking; none without the variable."""
    if not environ.get(EnvVar.AUTO_REPLY):
        return AutoReplySettings()
    return policy(environ, EnvVar.AUTO_REPLY, AutoReplySettings)
