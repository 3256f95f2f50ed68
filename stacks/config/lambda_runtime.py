"""The Lambda runtime and architecture every function runs on, and the public SSM parameter under
which Powertools publishes its layer for them. The stack resolves that parameter at deploy time
(stacks/constructs/function.py) and `lanectl preflight` reads it before, both through
`powertools_parameter`, so the two never name different layers."""

from __future__ import annotations

PYTHON_RUNTIME = "python3.14"
ARCHITECTURE = "arm64"
POWERTOOLS_PARAMETERS = "/aws/service/powertools/python"


def powertools_versions_path() -> str:
    """Where the parameter of every version published for this runtime and architecture sits."""
    return f"{POWERTOOLS_PARAMETERS}/{ARCHITECTURE}/{PYTHON_RUNTIME}"


def powertools_parameter(version: str) -> str:
    """The parameter whose value is the layer's ARN for `version`. Powertools publishes one per
    version, runtime and architecture, in each region it supports; a version it did not publish for
    the runtime has none, and the deploy fails resolving it."""
    return f"{powertools_versions_path()}/{version}"
