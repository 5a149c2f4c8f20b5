"""The Pulumi CLI version the README says the project is tested with is the one the workflows install and the
SDK's pinned version."""

from __future__ import annotations

import re

import yaml

from tests.stack.conftest import ROOT


def workflow_cli_versions() -> set[str]:
    versions = set()
    for name in ("preview.yml", "deploy.yml"):
        workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
        for job in workflow["jobs"].values():
            versions |= {
                str(s["with"]["pulumi-version"])
                for s in job["steps"]
                if "pulumi-version" in s.get("with", {})
            }
    return versions


def test_the_readme_names_the_cli_version_the_workflows_install_and_the_sdk_pin() -> None:
    stated = re.findall(r"Tested with Pulumi CLI (\d+\.\d+\.\d+)", (ROOT / "README.md").read_text())
    sdk = re.findall(r"^pulumi==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M)
    assert stated and sdk and workflow_cli_versions() == {stated[0]} == set(sdk)
