"""The stack's study and best-fed training job in the real dynamic-provider host, with inputs the SDK
serialized under the mock runtime: a first preview (upstream outputs and the best parameters unknown) passes
Check; bad known study inputs still fail it."""

from __future__ import annotations

from pulumi.runtime.rpc import UNKNOWN

from infra.stack import build
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from tests.engine.host import plain
from tests.fakes.pulumi_mocks import MockedRun, run_program
from tests.stack.conftest import stack_config

STUDY = {
    "metric": "val_accuracy",
    "algorithm": "grid",
    "maxTrials": 4,
    "parallelTrials": 2,
    "parameters": {"learningRate": {"values": [0.01, 0.001]}, "batchSize": {"values": [16, 32]}},
}


def stack_run(preview: bool) -> MockedRun:
    cfg = stack_config("dev", tuning=STUDY, trainWithBest=True)
    return run_program(lambda: build(cfg), stack="dev", preview=preview)


def test_preview_passes_check_for_the_study_and_the_training_job_and_bad_studies_fail(start_host):
    host = start_host()
    run = stack_run(preview=True)
    tune = run.one(TUNING_JOB)
    (train,) = [r for r in run.by_type(CUSTOM_JOB) if r.name == "train"]
    sent = plain(tune.struct)
    assert sent["service_account"] == UNKNOWN and sent["worker_pools"][0]["image_uri"] == UNKNOWN
    # Unknown until the study has run: the training job's arguments and run directory.
    assert plain(train.struct)["worker_pools"][0]["args"] == UNKNOWN
    assert plain(train.struct)["base_output_dir"] == UNKNOWN
    for resource in (tune, train):
        checked = host.check(resource.struct)
        assert [(f.property, f.reason) for f in checked.failures] == []
    returned = plain(host.check(tune.struct).inputs)
    assert returned["service_account"] == UNKNOWN
    assert returned["metric_id"] == "val_accuracy" and returned["max_failed_trial_count"] == 0
    # The study takes the training job's fallbacks (the dev chain); unknown ones (or entries) pass too.
    assert sent["fallbacks"] == plain(train.struct)["fallbacks"] and len(sent["fallbacks"]) == 2
    for unknown in (UNKNOWN, [UNKNOWN, {"scheduling_strategy": UNKNOWN}]):
        tune.struct["fallbacks"] = unknown
        assert host.check(tune.struct).failures == []

    # The same host still rejects a bad known study.
    struct = stack_run(preview=False).one(TUNING_JOB).struct
    struct["parallel_trial_count"] = 9
    checked = host.check(struct)
    assert [f.property for f in checked.failures] == ["parallel_trial_count"]
    assert "exceeds max_trial_count (4)" in checked.failures[0].reason
    struct["parallel_trial_count"] = 2
    struct["fallbacks"] = [{"scheduling_strategy": "NOW"}]
    assert [f.property for f in host.check(struct).failures] == ["fallbacks[0]"]
