"""The dynamic providers hold no secret (`serialize_as_secret_always = False`, issue 43): today's program
sends `__provider` in plain text, a secret the inputs hold stays secret, and the state an earlier version
wrote, whose `__provider` the SDK marked secret, still reads, diffs as unchanged and deletes
(test_stored_state.py replays it through the real host; here, what the SDK itself sends)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from pulumi.dynamic.dynamic import PROVIDER_KEY

from tests.compat.cases import CASES, Case
from tests.compat.test_stored_state import PICKLED_AT, STATES
from tests.engine.host import secret_paths
from tests.engine.inputs import JobShape, known, recorded

# Every dynamic provider class a stack pickles (the contract's paths), the retired-role marker's included.
PROVIDER_CLASSES = (
    *PICKLED_AT.values(),
    ("infra.vertex.batch_provider", "BatchPredictionProvider"),
    ("infra.vertex.deployment_provider", "DeploymentProvider"),
    ("infra.bootstrap.retired", "RetiredRoleProvider"),
)


@pytest.mark.parametrize(("module", "name"), PROVIDER_CLASSES, ids=[name for _, name in PROVIDER_CLASSES])
def test_each_provider_class_does_not_serialize_as_a_secret(module: str, name: str) -> None:
    provider = getattr(importlib.import_module(module), name)
    assert provider.serialize_as_secret_always is False


def test_the_sdk_sends_the_provider_in_plain_text_and_keeps_a_secret_env_secret() -> None:
    inputs = recorded(known(JobShape()), preview=False)  # a WANDB_API_KEY secret in the chief's env
    paths = secret_paths(inputs)
    assert PROVIDER_KEY not in paths
    assert "worker_pools[0].env.WANDB_API_KEY" in paths
    assert inputs[PROVIDER_KEY]  # the blob itself, a plain string


# Every stored resource of every recording (state-<commit>.json), each written with a secret `__provider`.
STORED = [
    (commit, case) for commit, state in STATES.items() for case in CASES if case.name in state["resources"]
]


@pytest.mark.parametrize(("commit", "case"), STORED, ids=[f"{c}-{case.name}" for c, case in STORED])
def test_todays_inputs_of_each_stored_resource_carry_the_same_class_in_plain_text(
    commit: str, case: Case, tmp_path: Path
) -> None:
    inputs = case.inputs(tmp_path)
    assert PROVIDER_KEY not in secret_paths(inputs)
    # The same class reference as the blob the earlier version stored (as a secret): nothing to replace.
    assert inputs[PROVIDER_KEY] == STATES[commit]["resources"][case.name]["inputs"][PROVIDER_KEY]
