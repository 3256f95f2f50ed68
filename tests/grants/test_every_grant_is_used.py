"""Least privilege by use: every grant a role has in the templates AWS runs was used by a call of
this run of the suite (`make test` records each function's calls, local_aws/iam/ledger.py), or
is kept with its reason beside it in the stack (stacks/constructs/grants.py `keep_unexercised`).
A call a role does not allow fails where it is made, with AccessDenied from the emulator; this
test fails on the other side: a grant nothing needs."""

from __future__ import annotations

import os

import pytest

from local_aws.iam import grant_use, ledger
from stacks.app_builder import build_app
from stacks.config.environments import ENVIRONMENTS
from stacks.runtime_env import stack_name

pytestmark = pytest.mark.xdist_group("synth")


@pytest.fixture(scope="module")
def uses():
    directory = os.environ.get(ledger.DIRECTORY_VARIABLE)
    if not directory:
        pytest.fail(f"no ledger of this run's calls: `make test` sets {ledger.DIRECTORY_VARIABLE} and runs this last")
    found = ledger.read(directory)
    if not found:
        pytest.fail(f"the ledger in {directory} is empty: the suite before this test recorded no call")
    return found


@pytest.mark.parametrize("name", ["prod", "dev"])
def test_every_grant_of_every_role_was_used_or_is_kept_with_a_reason(name, uses, tmp_path):
    # Given the environment's template, as `cdk synth` makes it
    env = ENVIRONMENTS[name]
    app, _ = build_app(env, outdir=str(tmp_path), nag=False)
    template = app.synth().get_stack_by_name(stack_name(env)).template

    # When each role's grants are set beside this run's calls
    verdicts = grant_use.compare(template, uses)

    # Then none is unused without a reason
    unjustified = [v for v in verdicts if v.unjustified]
    assert not unjustified, "granted, never used, kept without a reason:\n" + grant_use.table(unjustified, template)
    assert any(v.uses for v in verdicts)
