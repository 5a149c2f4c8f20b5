"""GitHub Actions workflows: actionlint clean, and the structure that keeps CI safe (parsed with yaml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.bootstrap.config import load_config
from infra.bootstrap.stack import build
from tests.fakes.pulumi_mocks import run_program

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
ACTIONLINT = Path(sys.executable).parent / "actionlint"
ZIZMOR = Path(sys.executable).parent / "zizmor"
NAMES = ("ci", "preview", "deploy")


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((WORKFLOWS / f"{name}.yml").read_text())


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the bare key `on` as the boolean True.
    return workflow.get("on", workflow.get(True))


def steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return workflow["jobs"][job]["steps"]


def step_using(workflow: dict[str, Any], job: str, action: str) -> dict[str, Any]:
    found = [s for s in steps(workflow, job) if s.get("uses", "").startswith(action + "@")]
    assert len(found) == 1, f"expected one {action} step in {job}, found {len(found)}"
    return found[0]


# `owner/repo@<full commit SHA> # vX.Y.Z`: a tag can be moved to other code, a commit cannot (docs/ci.md).
PINNED_USES = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v(\d+)\.\d+\.\d+)$")
USES_LINE = re.compile(r"^\s*(?:- )?uses:")


def as_major_tags(text: str) -> str:
    """The workflow with each SHA pin written as its tag comment's major version (`@v7`).

    actionlint knows popular actions' inputs by `owner/repo@vN` and checks none for a bare commit SHA; the
    copy lets it keep checking the inputs of the exact release each pin names.
    """
    lines = []
    for line in text.splitlines():
        pinned = PINNED_USES.match(line)
        if pinned:
            action, sha, _tag, major = pinned.groups()
            line = line.replace(f"{action}@{sha}", f"{action}@v{major}").split(" # ")[0]
        lines.append(line)
    return "\n".join(lines) + "\n"


def actionlint(tmp_path: Path, texts: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for name, text in texts.items():
        (tmp_path / name).write_text(as_major_tags(text))
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", *sorted(str(tmp_path / name) for name in texts)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_actionlint_is_clean(tmp_path: Path) -> None:
    result = actionlint(tmp_path, {p.name: p.read_text() for p in WORKFLOWS.glob("*.yml")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_misspelled_action_input(tmp_path: Path) -> None:
    """Proves the lint above checks action inputs (an edit-pr-comment typo would silently do nothing)."""
    broken = (WORKFLOWS / "preview.yml").read_text().replace("edit-pr-comment:", "edit-pr-comments:")
    result = actionlint(tmp_path, {"preview.yml": broken})
    assert result.returncode == 1 and "edit-pr-comments" in result.stdout


@pytest.mark.parametrize("name", NAMES)
def test_every_action_is_pinned_to_a_commit_with_its_release_tag(name: str) -> None:
    lines = [line for line in (WORKFLOWS / f"{name}.yml").read_text().splitlines() if USES_LINE.match(line)]
    assert lines, f"{name}.yml runs no action"
    for line in lines:
        assert PINNED_USES.match(line), (
            f"{line.strip()!r}: pin to a full commit SHA + '# vX.Y.Z' (docs/ci.md)"
        )


def test_the_pin_check_refuses_a_tag_a_short_sha_and_a_missing_comment() -> None:
    sha = "3d3c42e5aac5ba805825da76410c181273ba90b1"
    assert PINNED_USES.match(f"      - uses: actions/checkout@{sha} # v7.0.1")
    for line in (
        "      - uses: actions/checkout@v7",
        f"      - uses: actions/checkout@{sha}",
        f"      - uses: actions/checkout@{sha[:12]} # v7.0.1",
        f"      - uses: actions/checkout@{sha} # v7",
    ):
        assert USES_LINE.match(line) and not PINNED_USES.match(line), line


def test_dependabot_updates_the_pinned_actions() -> None:
    """The pins are kept current by Dependabot's github-actions ecosystem, which rewrites SHA and comment."""
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert config["version"] == 2
    (actions,) = [u for u in config["updates"] if u["package-ecosystem"] == "github-actions"]
    assert actions["directory"] == "/" and actions["schedule"]["interval"] in {"daily", "weekly", "monthly"}


def test_zizmor_finds_nothing_unsuppressed() -> None:
    """The workflows' security audit, offline, as `make lint` runs it; each accepted finding is suppressed
    on its own line with the reason."""
    result = subprocess.run(
        [str(ZIZMOR), "--offline", "--no-progress", "--format", "plain", str(WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "No findings to report" in result.stdout, result.stdout + result.stderr


def test_zizmor_catches_a_tag_pin(tmp_path: Path) -> None:
    """Proves the audit above reads the pins: a tag in place of a SHA is a finding (exit 13: high)."""
    text = (WORKFLOWS / "ci.yml").read_text()
    (tmp_path / "ci.yml").write_text(
        re.sub(r"actions/checkout@[0-9a-f]{40} # v7\.\d+\.\d+", "actions/checkout@v7", text)
    )
    result = subprocess.run(
        [str(ZIZMOR), "--offline", "--no-progress", "--format", "plain", str(tmp_path / "ci.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "unpinned-uses" in result.stdout, result.stdout + result.stderr


def test_the_workflow_set() -> None:
    assert sorted(p.stem for p in WORKFLOWS.glob("*.yml")) == sorted(NAMES)
    assert not list(WORKFLOWS.glob("*.yaml"))


@pytest.mark.parametrize("name", NAMES)
def test_actions_are_pinned_and_no_keys_or_unsafe_triggers(name: str) -> None:
    text = (WORKFLOWS / f"{name}.yml").read_text()
    workflow = load(name)
    for job in workflow["jobs"]:
        for step in steps(workflow, job):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step
            assert "credentials_json" not in step.get("with", {}), "service account keys are never used"
    # pull_request_target runs fork code with the base repository's secrets.
    assert "pull_request_target" not in triggers(workflow)
    assert set(re.findall(r"secrets\.(\w+)", text)) <= {"GITHUB_TOKEN", "PULUMI_ACCESS_TOKEN"}
    assert workflow["permissions"] == {"contents": "read"}, "workflow-level token is read-only"
    assert "concurrency" in workflow


def test_ci_runs_the_readme_test_command_on_push_and_pull_request() -> None:
    workflow = load("ci")
    assert set(triggers(workflow)) == {"push", "pull_request"}
    job = workflow["jobs"]["test"]
    assert "permissions" not in job
    python = step_using(workflow, "test", "actions/setup-python")["with"]
    assert python["python-version"] == "3.11" and python["cache"] == "pip"
    assert [s["run"] for s in job["steps"] if "run" in s] == [".ci/run"]
    ci_run = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci_run and "make lint" in ci_run  # lint: ruff and the type checker (Makefile)
    assert workflow["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_preview_is_keyless_read_only_and_skips_forks() -> None:
    workflow = load("preview")
    assert set(triggers(workflow)) == {"pull_request"}
    job = workflow["jobs"]["preview"]
    condition = " ".join(job["if"].split())
    assert "github.event.pull_request.head.repo.full_name == github.repository" in condition
    assert job["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    assert workflow["concurrency"] == {
        "group": "preview-${{ github.event.pull_request.number }}",
        "cancel-in-progress": True,
    }
    auth = step_using(workflow, "preview", "google-github-actions/auth")["with"]
    assert auth == {
        "workload_identity_provider": "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}",
        "service_account": "${{ vars.GCP_PREVIEW_SERVICE_ACCOUNT }}",
    }
    pulumi = step_using(workflow, "preview", "pulumi/actions")["with"]
    assert pulumi["command"] == "preview" and pulumi["stack-name"] == "dev"
    assert pulumi["comment-on-pr"] is True and pulumi["edit-pr-comment"] is True
    assert pulumi["github-token"] == "${{ secrets.GITHUB_TOKEN }}"
    order = [s.get("uses", s.get("run", "")).split("@")[0] for s in job["steps"]]
    assert (
        order.index("google-github-actions/auth") < order.index("make setup") < order.index("pulumi/actions")
    )


def test_deploy_is_manual_gated_by_environment_and_never_cancelled() -> None:
    workflow = load("deploy")
    assert set(triggers(workflow)) == {"workflow_dispatch"}
    job = workflow["jobs"]["deploy"]
    assert job["environment"] == "dev"
    assert job["if"] == "github.ref == 'refs/heads/main'"
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    auth = step_using(workflow, "deploy", "google-github-actions/auth")["with"]
    assert auth["service_account"] == "${{ vars.GCP_DEPLOY_SERVICE_ACCOUNT }}"
    pulumi = step_using(workflow, "deploy", "pulumi/actions")["with"]
    assert pulumi["command"] == "${{ inputs.command }}" and pulumi["stack-name"] == "dev"
    command = triggers(workflow)["workflow_dispatch"]["inputs"]["command"]
    assert (command["type"], command["options"], command["default"]) == ("choice", ["up", "destroy"], "up")


def test_destroying_dev_fails_when_anything_of_it_still_bills() -> None:
    """After `pulumi destroy`, `make leftovers` runs: its exit 1 (something bills) or 2 (cannot tell) fails
    the job. It comes after the destroy, only on destroy, and nothing may let its failure pass."""
    workflow = load("deploy")
    job_steps = steps(workflow, "deploy")
    destroy = job_steps.index(step_using(workflow, "deploy", "pulumi/actions"))
    (check,) = [s for s in job_steps if "leftovers" in s.get("run", "")]
    assert job_steps.index(check) == destroy + 1
    assert check["run"] == "make leftovers STACK=dev"
    assert check["if"] == "inputs.command == 'destroy'"
    assert "continue-on-error" not in check and "||" not in check["run"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(
        r"^leftovers: setup\n\t\$\(BIN\)/python -m infra.leftovers --stack \$\(STACK\)", makefile, re.M
    )
    assert re.search(r"^\.PHONY: .*\bleftovers\b", makefile, re.M)


def test_workflows_use_what_the_bootstrap_stack_creates() -> None:
    """Variable names, the deploy environment and the backend match the bootstrap outputs and defaults."""
    cfg = load_config(
        {"project": "my-gcp-project", "githubRepository": "o/r", "billingAccount": "012345-6789AB-CDEF01"}
    )
    outputs = run_program(lambda: build(cfg), project="vertex-training-bootstrap", stack="ci").outputs
    used: set[str] = set()
    for name in ("preview", "deploy"):
        used |= set(re.findall(r"vars\.(\w+)", (WORKFLOWS / f"{name}.yml").read_text()))
    assert used == set(outputs["githubVariables"])
    assert load("deploy")["jobs"]["deploy"]["environment"] == cfg.deploy_stack
    for name in ("preview", "deploy"):
        assert load(name)["jobs"][name]["env"]["PULUMI_BACKEND_URL"] == "${{ vars.PULUMI_BACKEND_URL }}"
