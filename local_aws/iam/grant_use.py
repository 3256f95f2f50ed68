"""Each role's grants beside the uses the ledger holds: which granted action on which resource
some run used, and which none did.

A template's policies are read by logical ID (`WebhookLogTable`, `WebhookLogTable/index/<name>`,
`MessagesQueue`), as the ledger records uses, so uses recorded against the local environment's
template, or a unit test's stand-in resources, are compared with prod's grants. A grant no run
uses is kept only with a reason written beside it in the stack (stacks/constructs/grants.py
`keep_unexercised`), carried in the role's template metadata under `REASONS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from local_aws.iam.documents import parse_document
from local_aws.iam.ledger import Use
from local_aws.iam.patterns import action_matches, wildcard_matches
from local_aws.intrinsics import Resolver
from stacks.template_metadata import UNEXERCISED_GRANTS

REASONS = UNEXERCISED_GRANTS


@dataclass(frozen=True)
class Grant:
    role: str
    action: str
    resource: str

    def used_by(self, use: Use) -> bool:
        role, action, resource = use
        return role == self.role and action_matches(self.action, action) and wildcard_matches(self.resource, resource)


@dataclass(frozen=True)
class Kept:
    actions: tuple[str, ...]
    resource: str
    reason: str

    def covers(self, grant: Grant) -> bool:
        return grant.action in self.actions and self.resource in ("*", grant.resource)


def _symbolic(template: Mapping[str, Any]) -> Resolver:
    """Every reference as the logical ID it names (an ARN attribute too), so `Fn::Join` of a
    table's ARN and `/index/x` reads `Table/index/x`."""
    return Resolver(
        ref=lambda logical_id: logical_id,
        get_att=lambda logical_id, attribute: logical_id if attribute == "Arn" else f"{logical_id}.{attribute}",
        pseudo={
            name: "${" + name + "}"
            for name in (
                "AWS::Region",
                "AWS::AccountId",
                "AWS::Partition",
                "AWS::URLSuffix",
                "AWS::StackName",
                "AWS::NoValue",
            )
        },
        parameters={name: name for name in template.get("Parameters", {})},
    )


def grants(template: Mapping[str, Any]) -> list[Grant]:
    """Every (role, action, resource) a template's identity policies allow, by logical ID."""
    resolver = _symbolic(template)
    found: list[Grant] = []
    for resource in template["Resources"].values():
        if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        properties = resource["Properties"]
        statements = parse_document(resolver.resolve(properties["PolicyDocument"]), resource_policy=False)
        for role in properties.get("Roles", ()):
            for statement in statements:
                if statement.effect != "Allow":
                    continue
                found.extend(
                    Grant(role["Ref"], action, str(target))
                    for action in statement.actions
                    for target in statement.resources
                )
    return found


def kept(template: Mapping[str, Any]) -> dict[str, list[Kept]]:
    """The reasons written beside grants no run is expected to use, by role."""
    found: dict[str, list[Kept]] = {}
    for logical_id, resource in template["Resources"].items():
        for entry in (resource.get("Metadata") or {}).get(REASONS, ()):
            found.setdefault(logical_id, []).append(
                Kept(tuple(entry["actions"]), str(entry.get("resource", "*")), str(entry["reason"]))
            )
    return found


@dataclass(frozen=True)
class Verdict:
    grant: Grant
    uses: int
    reason: str | None
    """Why it is kept unused (None: used, or kept without a reason)."""

    @property
    def unjustified(self) -> bool:
        return self.uses == 0 and self.reason is None


def compare(template: Mapping[str, Any], uses: Mapping[Use, int]) -> list[Verdict]:
    """Each grant with how many calls used it."""
    reasons = kept(template)
    verdicts = []
    for grant in grants(template):
        count = sum(n for use, n in uses.items() if grant.used_by(use))
        reason = next((k.reason for k in reasons.get(grant.role, ()) if k.covers(grant)), None)
        verdicts.append(Verdict(grant, count, reason if count == 0 else None))
    return verdicts


def roles_of_functions(template: Mapping[str, Any]) -> dict[str, str]:
    """Role logical ID to the logical ID of the function that runs under it."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Function":
            role = resource["Properties"]["Role"]
            found[role["Fn::GetAtt"][0]] = logical_id
    return found


def table(verdicts: Iterable[Verdict], template: Mapping[str, Any]) -> str:
    """A Markdown table: per function, each granted action on each resource, used or why kept."""
    functions = roles_of_functions(template)
    lines = ["| function | action | resource | used | kept because |", "|---|---|---|---|---|"]
    for verdict in sorted(
        verdicts, key=lambda v: (functions.get(v.grant.role, v.grant.role), v.grant.resource, v.grant.action)
    ):
        grant = verdict.grant
        used = f"{verdict.uses:,}" if verdict.uses else "no"
        function = functions.get(grant.role, grant.role)
        lines.append(f"| {function} | {grant.action} | {grant.resource} | {used} | {verdict.reason or ''} |")
    return "\n".join(lines)
