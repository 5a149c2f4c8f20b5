"""Run the stack program under Pulumi's mock runtime for each committed stack file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import StackConfig, load_config
from tests.fakes.pulumi_mocks import MockedRun, run_program

ROOT = Path(__file__).resolve().parents[2]
STACKS = ("local", "dev", "prod", "cassava", "housing")
# The stacks that run the built-in trainer; `housing` runs examples/housing/ (a trainer of one's own).
BUILTIN_TRAINER_STACKS = ("local", "dev", "prod", "cassava")
LOCAL_STACKS = ("local", "housing")
CLOUD_STACKS = ("dev", "prod", "cassava")


# The committed cloud stack files ship example ids, which load_config refuses (infra/config/placeholders.py):
# tests set their own, as a user does with `pulumi config set`.
OWN_IDS = {"gcpProject": "acme-vt-{stack}", "billingAccount": "0A1B2C-3D4E5F-6A7B8C"}


def own_ids(stack: str) -> dict[str, str]:
    return {key: value.format(stack=stack) for key, value in OWN_IDS.items()}


def committed_values(stack: str) -> dict[str, Any]:
    """The `config:` section of Pulumi.<stack>.yaml as committed."""
    return dict(yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"])


def stack_values(stack: str, **overrides: Any) -> dict[str, Any]:
    """Pulumi.<stack>.yaml's config with this test's ids (cloud stacks), then `vertex-training:<key>`
    overrides (None removes)."""
    values = committed_values(stack)
    if stack in CLOUD_STACKS:
        overrides = {**own_ids(stack), **overrides}
    for key, value in overrides.items():
        values.pop(f"vertex-training:{key}", None)
        if value is not None:
            values[f"vertex-training:{key}"] = value
    return values


def stack_config(stack: str, **overrides: Any) -> StackConfig:
    return load_config(stack_values(stack, **overrides), stack)


# The jobs' environment reads these where `pulumi up` runs (infra/workloads/jobs.py job_env), and importing
# the trainer sets TF_CPP_MIN_LOG_LEVEL in this process: stacks are built with neither set, whatever ran
# before.
JOB_ENV_OVERRIDES = ("TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES")


def run_stack(stack: str, **overrides: Any) -> MockedRun:
    from infra.stack import build

    cfg = stack_config(stack, **overrides)
    with pytest.MonkeyPatch.context() as mp:
        for name in JOB_ENV_OVERRIDES:
            mp.delenv(name, raising=False)
        return run_program(lambda: build(cfg), project="vertex-training", stack=stack)


@pytest.fixture(autouse=True)
def _jobs_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Programs a test here builds itself (run_program) see the same defaults."""
    for name in JOB_ENV_OVERRIDES:
        monkeypatch.delenv(name, raising=False)


_RUNS: dict[str, MockedRun] = {}


def cached_run(stack: str) -> MockedRun:
    """Each committed stack file runs once per session; tests only read the recorded registrations."""
    if stack not in _RUNS:
        _RUNS[stack] = run_stack(stack)
    return _RUNS[stack]


@pytest.fixture(params=STACKS)
def any_stack(request: pytest.FixtureRequest) -> tuple[str, MockedRun]:
    return request.param, cached_run(request.param)


@pytest.fixture(params=CLOUD_STACKS)
def cloud_stack(request: pytest.FixtureRequest) -> tuple[str, MockedRun]:
    return request.param, cached_run(request.param)
