"""The whole program as a first `pulumi preview` sees it, for each committed stack.

The CustomJob inputs the SDK serializes (upstream outputs unknown) pass the provider's check in the real host.
"""

from __future__ import annotations

import pytest
from pulumi.runtime.rpc import UNKNOWN

from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from tests.engine.host import plain
from tests.fakes.pulumi_mocks import run_program
from tests.stack.conftest import STACKS, stack_config


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
@pytest.mark.parametrize("stack", STACKS)
def test_program_job_inputs_pass_check_in_the_host(checking_host, stack, preview):
    cfg = stack_config(stack)
    run = run_program(lambda: build(cfg), stack=stack, preview=preview)
    jobs = run.by_type(RESOURCE_TYPE)
    assert sorted(job.name for job in jobs) == (
        ["train"] if cfg.data.source == "none" else ["data-prep", "train"]
    )
    host = checking_host
    for job in jobs:
        sent = plain(job.struct)
        unknown = {key for key, value in sent.items() if UNKNOWN in repr(value)}
        if preview and not cfg.is_local:
            # Not created yet in a first preview: the job's identity and the trainer image.
            assert "service_account" in unknown, (job.name, sent)
            if job.name == "train":
                assert "worker_pools" in unknown, sent["worker_pools"]
        elif preview and job.name == "train" and cfg.data.source != "none":
            # The data job's outcome (job_gate.after_success) is not known before it ran.
            assert unknown == {"upstream_job"}, (job.name, unknown)
        else:
            assert unknown == set(), (job.name, unknown)
        checked = host.check(job.struct)
        assert [(f.property, f.reason) for f in checked.failures] == [], (stack, job.name)
        assert plain(checked.inputs)["queue_timeout_seconds"] == cfg.queue_timeout_seconds
