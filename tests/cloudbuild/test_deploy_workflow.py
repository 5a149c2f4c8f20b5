"""The deploy workflow sets up Docker only for a stack whose imageBuilder is docker (its script, run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def deploy_steps() -> list[dict]:
    return yaml.safe_load((ROOT / ".github/workflows/deploy.yml").read_text())["jobs"]["deploy"]["steps"]


def run_builder_step(cwd: Path) -> dict[str, str]:
    """Run the workflow's own 'Read the stack's image builder' script with bash, as the runner would."""
    [step] = [s for s in deploy_steps() if s.get("id") == "stack"]
    output = cwd / "github_output"
    output.touch()
    subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=cwd, env={"GITHUB_OUTPUT": str(output)}, check=True, timeout=60
    )
    return dict(line.split("=", 1) for line in output.read_text().splitlines())


def test_the_committed_dev_stack_needs_no_docker(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    assert run_builder_step(tmp_path) == {"builder": "cloudbuild", "region": "us-central1"}
    [docker] = [s for s in deploy_steps() if "configure-docker" in s.get("run", "")]
    assert docker["if"] == "steps.stack.outputs.builder == 'docker'"
    assert not [s for s in deploy_steps() if "docker/setup" in s.get("uses", "")]


@pytest.mark.parametrize(("line", "builder"), [("imageBuilder: docker", "docker"), ("", "cloudbuild")])
def test_the_step_reads_the_builder_or_its_default(tmp_path: Path, line: str, builder: str) -> None:
    config = "config:\n  vertex-training:region: europe-west4\n"
    config += f"  vertex-training:{line}\n" if line else ""
    (tmp_path / "Pulumi.dev.yaml").write_text(config)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    assert run_builder_step(tmp_path) == {"builder": builder, "region": "europe-west4"}
