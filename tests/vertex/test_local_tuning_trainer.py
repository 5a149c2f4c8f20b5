"""A 2-trial grid study of the built-in trainer run by the local runner, at a tiny size: the best trial is the
one whose reported val_accuracy (cloudml-hypertune file) is highest, and it is the exported model's. Both
trials run at once; waves of trials are tests/vertex/test_local_tuning.py's (a trainer that starts at once).

Where a trial's time goes (measured 2026-11-22 on the shared 2-core machine, one trial alone): Python + TF +
tf_keras imports ~4.5 s, model build ~2 s, the one epoch ~8 s (almost all of it tracing the train and test
functions: 4 steps at 32 px take little), export ~2 s, reloading the SavedModel for its metrics ~1 s.
ResNet50 (175 layers) traces in about half DenseNet121's time (427 layers): 18 s a trial against 33 s.
"""

import json
from pathlib import Path

import pytest

from infra.vertex.tuning_provider import TuningJobProvider
from tests.vertex.props import pool
from tests.vertex.tuning_props import tuning_props

pytestmark = pytest.mark.slow


def test_local_grid_study_of_the_trainer_picks_the_best_reported_metric(tiny_data, tmp_path, capsys):
    trainer = pool(
        command=["python", "-m", "trainer.task"],
        args=[
            *("--data-dir", tiny_data, "--image-size", "32", "--weights", "none", "--backbone", "resnet50"),
            *("--epochs", "1", "--fine-tune-epochs", "0", "--batch-size", "8"),
        ],
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "CLOUD_ML_HP_METRIC_TAG": "val_accuracy"},
        accelerator_type=None,
        accelerator_count=0,
        machine_type="n1-standard-4",
    )
    grid = [
        {"parameter_id": "learning-rate", "type": "DISCRETE", "values": [0.01, 0.001]},
        # As the stack builds them (infra/config/tuning.py): whole numbers as CATEGORICAL strings.
        {"parameter_id": "batch-size", "type": "CATEGORICAL", "values": ["8", "16"]},
    ]
    props = tuning_props(
        runner="local",
        display_name="tune-resnet",
        base_output_dir=str(tmp_path / "study"),
        worker_pools=[trainer],
        poll_interval_seconds=0.5,
        algorithm="grid",
        parameters=grid,
        max_trial_count=2,  # the grid's first two points: both parameter types still reach the trainer
        parallel_trial_count=2,
        max_failed_trial_count=1,
    )
    provider = TuningJobProvider()
    checked = provider.check({}, props)
    assert checked.failures == []
    outs = provider.create(checked.inputs).outs
    err = capsys.readouterr().err
    with capsys.disabled():
        print(
            "\n" + "\n".join(line for line in err.splitlines() if "] trial " in line or "JOB_STATE_" in line)
        )

    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert [t["state"] for t in outs["trials"]] == ["SUCCEEDED"] * 2
    for trial in outs["trials"]:
        model_dir = tmp_path / "study" / trial["id"] / "model"
        # The trainer got the trial's flags (`--learning-rate=0.01` as a DISCRETE double, `--batch-size=16`
        # as a CATEGORICAL string) and its own AIP_MODEL_DIR; its last report is the exported model's.
        exported = json.loads((model_dir / "metrics.json").read_text())
        assert exported["global_batch_size"] == int(trial["parameters"]["batch-size"])
        assert trial["metric"] == pytest.approx(exported["val_accuracy"])
        reports = (
            Path(tmp_path / "study" / trial["id"] / "hypertune" / "output.metrics").read_text().splitlines()
        )
        assert len(reports) == 2  # one epoch, then the exported model
    best = max(outs["trials"], key=lambda t: t["metric"])
    assert outs["best_trial"] == best["id"] and outs["best_metric"] == best["metric"]
    assert outs["best_parameters"] == best["parameters"]
    assert sum(f"] trial {t['id']} SUCCEEDED: " in err for t in outs["trials"]) == 2
