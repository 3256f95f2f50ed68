"""Runs mutmut (the version pinned in pyproject.toml's `mutation` group) with one correction.

mutmut names a mutant after its file's path (`lambdas/pipeline/domain/consumer/retry.py` gives
`lambdas.pipeline.domain.consumer.retry`) and strips only a leading `src.`, while the code imports as
`pipeline.domain.consumer.retry` because `lambdas/` is the Lambda asset's root. The two names must agree:
mutmut matches the tests that reach a function, and the mutant a worker switches on, by module
name. So this launcher strips `lambdas.` the same way and then hands the command line to mutmut.

Run as a script (never imported as `tests.mutation...`): mutmut runs pytest inside its copy of
the project, mutants/, where `tests` must be that copy's package, not this one.
"""

from __future__ import annotations

from pathlib import Path

import mutmut.__main__ as mutmut_cli
from mutmut.mutation import file_mutation
from mutmut.utils import format_utils

CODE_ROOT = "lambdas."

_path_name = format_utils.get_mutant_name


def _import_name(relative_source_path: Path, mutant_method_name: str) -> str:
    return _path_name(relative_source_path, mutant_method_name).removeprefix(CODE_ROOT)


for _module in (format_utils, mutmut_cli, file_mutation):
    _module.get_mutant_name = _import_name  # type: ignore[attr-defined]


if __name__ == "__main__":
    mutmut_cli.cli()
