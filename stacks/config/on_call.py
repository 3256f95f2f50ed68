"""Who the on-call topic pages, per environment: email addresses, HTTPS endpoints (PagerDuty,
Opsgenie and the like) and chat channels through AWS Chatbot (Slack, Microsoft Teams). Each is
checked when it is written, so a typo fails `cdk synth` with what is wrong instead of leaving a
subscription that never delivers.

The identifiers' rules are AWS's own (SNS for addresses and URLs, the Chatbot resources'
CloudFormation schemas for the chat ids), so a value refused here is one a deploy would refuse.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import urlsplit

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_EMAIL = re.compile(rf"[A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]+@{_LABEL}(?:\.{_LABEL})*")
_SLACK_WORKSPACE = re.compile(r"[0-9A-Z]{1,255}")
_SLACK_CHANNEL = re.compile(r"[A-Za-z0-9]{1,256}")
_UUID = re.compile(r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}")
_TEAMS_CHANNEL = re.compile(r"[a-zA-Z0-9-_=+/.,]*%3[aA][a-zA-Z0-9-_=+/.,]*%40[a-zA-Z0-9-_=+/.,]*")
_TEAMS_CHANNEL_MAX = 256


def _digest(*parts: str) -> str:
    """A short, stable name for an endpoint: its construct id and configuration name follow its
    value, so adding or removing one endpoint never replaces another's subscription (an email
    subscription replaced must be confirmed again)."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]


def _required(what: str, value: str) -> None:
    if not value or not value.strip():
        raise ValueError(f"on-call {what} is empty")
    if value != value.strip():
        raise ValueError(f"on-call {what} {value!r} has spaces around it")


@dataclass(frozen=True)
class EmailEndpoint:
    """An address SNS mails every alarm to. SNS first mails a confirmation link, and nothing is
    delivered until the recipient follows it."""

    address: str
    kind: ClassVar[str] = "email"

    def __post_init__(self) -> None:
        _required("email address", self.address)
        if not _EMAIL.fullmatch(self.address):
            raise ValueError(
                f"on-call email address {self.address!r} is not an address: write it as name@domain, "
                "with no display name or angle brackets"
            )

    @property
    def key(self) -> str:
        return _digest(self.kind, self.address.lower())

    def describe(self) -> str:
        return f"email {self.address}"


@dataclass(frozen=True)
class HttpsEndpoint:
    """A URL SNS posts every alarm to: PagerDuty's or Opsgenie's CloudWatch integration URL, for
    example, which confirm the subscription themselves. Only https: an http URL would carry the
    alarms, and the subscription's confirmation token, in clear."""

    url: str
    kind: ClassVar[str] = "https"

    def __post_init__(self) -> None:
        _required("HTTPS endpoint", self.url)
        if any(c.isspace() for c in self.url):
            raise ValueError(f"on-call HTTPS endpoint {self.url!r} contains whitespace")
        parts = urlsplit(self.url)
        if parts.scheme != "https":
            raise ValueError(
                f"on-call HTTPS endpoint {self.url!r} must start with https:// "
                "(SNS would send alarms and the subscription's confirmation in clear)"
            )
        if not parts.hostname:
            raise ValueError(f"on-call HTTPS endpoint {self.url!r} names no host")

    @property
    def key(self) -> str:
        return _digest(self.kind, self.url)

    def describe(self) -> str:
        parts = urlsplit(self.url)
        # The path of an integration URL is often its key: only the host is shown.
        return f"https {parts.hostname}"


@dataclass(frozen=True)
class SlackChannel:
    """A Slack channel notified through AWS Chatbot. The workspace must have been authorised once
    in the Chatbot console (AWS cannot do that step); its id (like T012AB3CD) is shown there, and
    the channel's id (like C0123ABCD) ends the channel's link."""

    workspace_id: str
    channel_id: str
    kind: ClassVar[str] = "slack"

    def __post_init__(self) -> None:
        _required("Slack workspace id", self.workspace_id)
        _required("Slack channel id", self.channel_id)
        if not _SLACK_WORKSPACE.fullmatch(self.workspace_id):
            raise ValueError(
                f"on-call Slack workspace id {self.workspace_id!r} must be capital letters and digits "
                "(like T012AB3CD, from the Chatbot console)"
            )
        if not _SLACK_CHANNEL.fullmatch(self.channel_id):
            raise ValueError(
                f"on-call Slack channel id {self.channel_id!r} must be letters and digits "
                "(like C0123ABCD, the end of the channel's link), not the channel's name"
            )

    @property
    def key(self) -> str:
        return _digest(self.kind, self.workspace_id, self.channel_id)

    def describe(self) -> str:
        return f"slack channel {self.channel_id} in workspace {self.workspace_id}"


@dataclass(frozen=True)
class TeamsChannel:
    """A Microsoft Teams channel notified through AWS Chatbot. The team must have been authorised
    once in the Chatbot console. The ids come from the channel's link
    (`https://teams.microsoft.com/l/channel/<channel id>/...?groupId=<team id>&tenantId=<tenant id>`);
    the channel id may be written as in the link (19%3A...%40thread.tacv2) or decoded
    (19:...@thread.tacv2)."""

    team_id: str
    channel_id: str
    tenant_id: str
    kind: ClassVar[str] = "teams"

    def __post_init__(self) -> None:
        _required("Teams team id", self.team_id)
        _required("Teams channel id", self.channel_id)
        _required("Teams tenant id", self.tenant_id)
        for what, value in (("team id", self.team_id), ("tenant id", self.tenant_id)):
            if not _UUID.fullmatch(value):
                raise ValueError(
                    f"on-call Teams {what} {value!r} must be a UUID (8-4-4-4-12 hexadecimal digits, "
                    "from the channel's link)"
                )
        encoded = self.chatbot_channel_id
        if len(encoded) > _TEAMS_CHANNEL_MAX or not _TEAMS_CHANNEL.fullmatch(encoded):
            raise ValueError(
                f"on-call Teams channel id {self.channel_id!r} is not a channel id: copy it from the "
                "channel's link (like 19%3Aabc123%40thread.tacv2)"
            )

    @property
    def chatbot_channel_id(self) -> str:
        """URL-encoded, as Chatbot takes it."""
        return self.channel_id.replace(":", "%3A").replace("@", "%40")

    @property
    def key(self) -> str:
        return _digest(self.kind, self.team_id.lower(), self.chatbot_channel_id.lower(), self.tenant_id.lower())

    def describe(self) -> str:
        return f"teams channel in team {self.team_id}"


OnCallEndpoint = EmailEndpoint | HttpsEndpoint | SlackChannel | TeamsChannel


@dataclass(frozen=True)
class Unattended:
    """Why an environment that keeps data (`retain_stateful`) is deployed paging nobody, or with no
    jobs caller granted. Without this, such an environment fails to synthesize: its alarms would
    publish into a topic nobody reads, or its jobs API would refuse every request, and a plain
    `cdk deploy` (which runs no `lanectl preflight`) would not say so."""

    reason: str

    def __post_init__(self) -> None:
        if len(self.reason.strip()) < 10:
            raise ValueError(f"an unattended environment says why, in words (not {self.reason!r})")


def check_attended(
    environment: str,
    keeps_data: bool,
    endpoints: tuple[OnCallEndpoint, ...],
    callers: int,
    unattended: Unattended | None,
) -> None:
    """Refuses an environment that keeps data with no on-call endpoint or no jobs caller, unless it
    says why (`unattended`)."""
    if not keeps_data or unattended is not None:
        return
    missing = [
        *(["no on-call endpoint (on_call): every alarm would reach nobody"] if not endpoints else []),
        *(["no jobs caller (jobs.settings.callers): the jobs API would refuse every request"] if not callers else []),
    ]
    if missing:
        raise ValueError(
            f"{environment} keeps data and has {'; and '.join(missing)}. Add them in "
            "stacks/config/environments.py, or deploy it so on purpose with "
            'unattended=Unattended("why")'
        )


def sns_delivers(endpoints: tuple[OnCallEndpoint, ...]) -> bool:
    """Whether SNS itself delivers to any of them (email, https), so that an undelivered page can
    land in a dead-letter queue of the stack's; Chatbot's deliveries are its own."""
    return any(isinstance(endpoint, EmailEndpoint | HttpsEndpoint) for endpoint in endpoints)


CHATBOT_ABSENT = ("cn-", "us-gov-")
"""Region prefixes of the partitions AWS Chatbot is not offered in."""


def check_endpoints(environment: str, endpoints: tuple[OnCallEndpoint, ...], region: str | None) -> None:
    """Refuses anything but endpoints, an endpoint written twice (it would be paged twice, and the
    stack cannot subscribe the same one twice), and a chat channel where Chatbot is not offered."""
    seen: dict[str, OnCallEndpoint] = {}
    for endpoint in endpoints:
        if not isinstance(endpoint, EmailEndpoint | HttpsEndpoint | SlackChannel | TeamsChannel):
            raise ValueError(
                f"{environment}: on_call takes EmailEndpoint, HttpsEndpoint, SlackChannel or TeamsChannel "
                f"values, not {endpoint!r}"
            )
        if endpoint.key in seen:
            raise ValueError(f"{environment}: on-call {endpoint.describe()} is listed twice")
        seen[endpoint.key] = endpoint
        if isinstance(endpoint, SlackChannel | TeamsChannel) and region and region.startswith(CHATBOT_ABSENT):
            raise ValueError(
                f"{environment}: on-call {endpoint.describe()} needs AWS Chatbot, which {region} does not offer; "
                "page an email address or an HTTPS endpoint there"
            )
