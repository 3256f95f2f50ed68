"""Keys of the metadata the stack writes into its template for the tools that read it; no aws_cdk
here, so the local runtime and the tests read them without the CDK."""

from __future__ import annotations

UNEXERCISED_GRANTS = "lanes:unexercised-grants"
"""On a role: [{"actions": [...], "resource": logical ID or "*", "reason": "..."}], the grants it
keeps though no local run uses them (stacks/constructs/grants.py `keep_unexercised`)."""
