"""The real CDK CLI through cdk.json, as a user runs it: offline, no credentials, no Docker."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("cli")


def _cdk(*args: str, outdir: Path) -> subprocess.CompletedProcess[str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") and key not in {"CDK_DEFAULT_ACCOUNT", "CDK_DEFAULT_REGION"}
    }
    environ.update(
        CDK_DISABLE_CLI_TELEMETRY="true",
        CDK_HOME=str(outdir / "cdk-home"),
        # No credentials anywhere: synthesis must not need them.
        AWS_CONFIG_FILE=str(outdir / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(outdir / "no-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return subprocess.run(
        ["npx", "--no-install", "cdk", "--no-notices", *args, "--output", str(outdir / "cdk.out")],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cdk_synth_through_cdk_json(tmp_path):
    result = _cdk("synth", "-c", "env=dev", "--quiet", outdir=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    template = json.loads((tmp_path / "cdk.out" / "lanes-dev.template.json").read_text())
    assert "MessagesQueue" in template["Resources"]
    assets = json.loads((tmp_path / "cdk.out" / "lanes-dev.assets.json").read_text())
    assert assets["files"], "the Lambda code asset is packaged without Docker"
    assert not assets.get("dockerImages")


def test_cdk_synth_with_an_unknown_environment_lists_the_valid_ones(tmp_path):
    result = _cdk("synth", "-c", "env=production", "--quiet", outdir=tmp_path)
    assert result.returncode != 0
    assert "unknown environment 'production'; valid environments: dev, local, prod, staging" in result.stderr
