"""The study in the stack under Pulumi's mock runtime: before training, trials that parse with the trainer's
CLI, and with trainWithBest the best parameters as the training job's arguments."""

from __future__ import annotations

import re

import pytest

from infra.config import ConfigError, load_config
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.lifecycle.output_files import output_dirs
from infra.vertex.tuning.resource import RESOURCE_TYPE as TUNING_JOB
from infra.vertex.tuning_provider import TuningJobProvider
from infra.workloads.best_parameters import with_best
from infra.workloads.jobs import best_training, plan
from tests.fakes import pulumi_mocks
from tests.stack.conftest import run_stack, stack_config

STUDY = {
    "metric": "val_accuracy",
    "goal": "MAXIMIZE",
    "algorithm": "grid",
    "maxTrials": 4,
    "parallelTrials": 2,
    "parameters": {"learningRate": {"values": [0.01, 0.001]}, "batchSize": {"values": [16, 32]}},
}
# As Vertex reports them: DISCRETE values as doubles, CATEGORICAL ones (whole-number keys' values) as strings.
BEST = {"learning-rate": 0.01, "batch-size": "16"}
BEST_BY_KEY = {"learningRate": 0.01, "batchSize": 16}  # the stack output: as `tuning` wrote them


@pytest.fixture
def best_is(monkeypatch: pytest.MonkeyPatch):
    """The mocked tuning job reports `best` (mocks do not run dynamic providers)."""

    def set_best(best: dict, metric: float = 0.91) -> None:
        computed = pulumi_mocks._computed_outputs

        def outputs(typ: str, name: str, inputs: dict) -> dict:
            found = {"best_parameters": best, "best_metric": metric} if typ == TUNING_JOB else {}
            return {**computed(typ, name, inputs), **found}

        monkeypatch.setattr(pulumi_mocks, "_computed_outputs", outputs)

    return set_best


def test_train_with_best_passes_the_best_parameters_to_the_training_job(best_is):
    from trainer import task

    best_is(BEST)
    run = run_stack("local", tuning=STUDY, trainWithBest=True)
    tune, train = run.named("tune"), run.named("train")
    assert tune.type == TUNING_JOB and train.type == CUSTOM_JOB
    args = task.parse_args(
        train.inputs["worker_pools"][0]["args"], env=output_dirs(train.inputs["base_output_dir"])
    )
    assert (args.learning_rate, args.batch_size) == (0.01, 16)
    # The study runs first: after data preparation, before training.
    assert run.named("data-prep").urn in tune.dependencies
    assert tune.urn in train.dependencies
    assert run.outputs["best_parameters"] == BEST_BY_KEY and run.outputs["best_metric"] == 0.91


def test_without_train_with_best_the_training_job_keeps_its_configured_arguments(best_is):
    from trainer import task

    best_is(BEST)
    run = run_stack("local", tuning=STUDY, learningRate=0.0005, batchSize=8)
    train = run.named("train").inputs
    args = task.parse_args(train["worker_pools"][0]["args"], env=output_dirs(train["base_output_dir"]))
    assert (args.learning_rate, args.batch_size) == (0.0005, 8)
    assert run.outputs["best_parameters"] == BEST_BY_KEY


def test_trials_parse_with_the_trainer_cli_and_keep_their_own_checkpoints():
    from trainer import task

    run = run_stack("dev", tuning=STUDY)
    tune = run.named("tune").inputs
    train = run.named("train").inputs
    # The trial job is the training job's pools, less the shared checkpoint dir, plus the metric's name.
    (pool,) = tune["worker_pools"]
    assert pool["machine_type"] == train["worker_pools"][0]["machine_type"]
    # Neither the shared checkpoint dir nor the tuned flags: each trial gets its own dir and values.
    assert not {"--checkpoint-dir", "--learning-rate", "--batch-size"} & set(pool["args"])
    assert pool["env"]["CLOUD_ML_HP_METRIC_TAG"] == "val_accuracy"
    assert tune["metric_id"] == "val_accuracy" and tune["algorithm"] == "grid"
    assert [p["parameter_id"] for p in tune["parameters"]] == ["learning-rate", "batch-size"]
    assert tune["base_output_dir"].startswith("gs://") and "/tuning/" in tune["base_output_dir"]
    trial_dirs = output_dirs(f"{tune['base_output_dir']}/7")  # Vertex: <base>/<trial id>/...
    assert [p["type"] for p in tune["parameters"]] == ["DISCRETE", "CATEGORICAL"]
    assert tune["parameters"][1]["values"] == ["16", "32"]  # Vertex passes these as written: --batch-size=32
    for parameter in tune["parameters"]:
        value = parameter["values"][-1]  # as Vertex passes it: a DISCRETE value as a double
        value = float(value) if parameter["type"] == "DISCRETE" else value
        args = task.parse_args([*pool["args"], f"--{parameter['parameter_id']}={value}"], env=trial_dirs)
        assert args.checkpoint_dir == trial_dirs["AIP_CHECKPOINT_DIR"]
        assert args.model_dir == trial_dirs["AIP_MODEL_DIR"]
    assert "best_parameters" in run.outputs and run.named("tune").urn in run.named("train").dependencies


def test_no_study_without_tuning():
    run = run_stack("local")
    assert run.by_type(TUNING_JOB) == []
    assert run.outputs["best_parameters"] == {} and run.outputs["best_metric"] is None


def test_a_changed_best_replaces_the_training_job_an_unchanged_one_does_not():
    cfg = stack_config("local", tuning=STUDY, trainWithBest=True)
    job = plan(cfg, data_code="d", trainer_code="t")
    first = best_training(cfg, job, BEST)
    assert best_training(cfg, job, dict(BEST)) == first
    args, run_dir = best_training(cfg, job, {**BEST, "learning-rate": 0.001})
    assert args != first[0] and run_dir != first[1]
    # Its checkpoints move too: a new best never resumes the old best's training.
    assert args[args.index("--checkpoint-dir") + 1] != first[0][first[0].index("--checkpoint-dir") + 1]


def test_with_best_maps_flags_onto_hyperparameters():
    study = {
        **STUDY,
        "algorithm": "random",
        "parameters": {
            **STUDY["parameters"],
            "fineTuneEpochs": {"min": 0, "max": 2},
            "backbone": {"values": ["densenet121", "resnet50"]},
        },
    }
    cfg = stack_config("local", tuning=study)
    hp = cfg.hyperparameters
    tuned = with_best(
        hp,
        cfg.tuning,
        {"learning-rate": 0.02, "batch-size": "64", "fine-tune-epochs": 0.0, "backbone": "resnet50"},
    )
    assert (tuned.learning_rate, tuned.batch_size, tuned.fine_tune_epochs, tuned.backbone) == (
        0.02,
        64,
        0,
        "resnet50",
    )
    assert isinstance(tuned.batch_size, int) and tuned.epochs == hp.epochs
    assert load_config({}, "local").tuning is None


def test_train_with_best_does_not_move_the_study():
    with_best_run = run_stack("local", tuning=STUDY, trainWithBest=True).named("tune").inputs
    assert run_stack("local", tuning=STUDY).named("tune").inputs == with_best_run
    changed = run_stack("local", tuning={**STUDY, "maxTrials": 3}).named("tune").inputs
    assert changed["base_output_dir"] != with_best_run["base_output_dir"]


def test_trials_keep_the_training_jobs_scheduling_strategy_and_restart_all():
    run = run_stack(
        "dev",
        tuning=STUDY,
        spot=False,
        machineType="g2-standard-8",
        acceleratorType="NVIDIA_L4",
        acceleratorCount=1,
        workerCount=1,
        schedulingStrategy="FLEX_START",
        maxWaitSeconds=1800,
    )
    tune, train = run.named("tune").inputs, run.named("train").inputs
    # Vertex's DWS page: "All custom training job types are supported, including CustomJob,
    # HyperparameterTuningjob, and TrainingPipeline"
    # (cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws, read 2026-11-22).
    for key in ("scheduling_strategy", "max_wait_seconds", "restart_on_worker_restart", "fallbacks"):
        assert tune[key] == train[key], key
    assert tune["scheduling_strategy"] == "FLEX_START" and tune["restart_on_worker_restart"] is True
    assert "max_cost_usd" not in tune and "max_restarts" not in tune
    # The provider's own check accepts the study as the stack declares it.
    props = {k: v for k, v in tune.items() if k != "__provider"}
    assert TuningJobProvider().check({}, props).failures == []


def test_the_dev_study_carries_the_training_jobs_fallback_chain():
    run = run_stack("dev", tuning=STUDY)
    tune, train = run.named("tune").inputs, run.named("train").inputs
    # Pulumi.dev.yaml's chain: T4 Spot -> L4 Spot on g2 -> T4 on-demand, as the training job has it.
    assert (
        tune["fallbacks"]
        == train["fallbacks"]
        == [
            {"machine_type": "g2-standard-4", "accelerator_type": "NVIDIA_L4"},
            {"scheduling_strategy": "STANDARD"},
        ]
    )
    props = {k: v for k, v in tune.items() if k != "__provider"}
    assert TuningJobProvider().check({}, props).failures == []


HOUSING_STUDY = {
    "metric": "val_mae",
    "goal": "MINIMIZE",
    "algorithm": "grid",
    "maxTrials": 2,
    "parameters": {"learningRate": {"values": [0.1, 0.01]}, "batchSize": {"values": [16, 32]}},
}
HOUSING_ARGS = [
    "--lr",
    "{learning_rate}",
    "--bs={batch_size}",
    "--ckpt={checkpoint_dir}",
    "--epochs",
    "{epochs}",
]


def test_a_trainer_of_your_own_is_tuned_by_the_flags_its_args_pass_and_its_own_metric():
    run = run_stack("housing", tuning=HOUSING_STUDY, trainerArgs=HOUSING_ARGS)
    tune, train = run.named("tune").inputs, run.named("train").inputs
    assert [p["parameter_id"] for p in tune["parameters"]] == ["lr", "bs"]
    assert tune["metric_id"] == "val_mae" and tune["goal"] == "MINIMIZE"
    # The training job checkpoints in the stack's dir; the trials get neither it (in whatever form the
    # args pass it) nor the tuned values: Vertex sets AIP_CHECKPOINT_DIR per trial and appends --lr=, --bs=.
    assert any(a.startswith("--ckpt=") for a in train["worker_pools"][0]["args"])
    assert tune["worker_pools"][0]["args"] == [
        "--epochs",
        str(stack_config("housing").hyperparameters.epochs),
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--epochs", "{epochs}"], "must pass {learning_rate} once"),
        (["--lr", "x{learning_rate}", "--bs", "{batch_size}"], "must pass {learning_rate} once"),
        (["--lr", "{learning_rate}", "--bs", "{batch_size}", "{checkpoint_dir}"], "positional"),
    ],
)
def test_a_study_refuses_args_it_cannot_set_or_leave_out(args: list[str], words: str):
    with pytest.raises(ConfigError, match=re.escape(words)) as caught:
        stack_config("housing", tuning=HOUSING_STUDY, trainerArgs=args)
    assert caught.value.key == "tuning" and "trainerArgs" in str(caught.value)
