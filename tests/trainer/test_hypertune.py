"""The trainer's metric reports: cloudml-hypertune's file format, once per epoch, only inside a study."""

import json

from trainer import hypertune


def test_reports_are_json_lines_in_the_library_format(tmp_path):
    path = tmp_path / "hypertune" / "output.metrics"
    reporter = hypertune.from_env(
        {
            "CLOUD_ML_HP_METRIC_TAG": "val_accuracy",
            "CLOUD_ML_HP_METRIC_FILE": str(path),
            "CLOUD_ML_TRIAL_ID": "3",
        }
    )
    assert reporter is not None
    callback = hypertune.ReportMetric(reporter)
    callback.on_epoch_end(0, {"val_accuracy": 0.5, "loss": 0.7})
    callback.on_epoch_end(1, {"loss": 0.6})  # no metric in the logs: nothing reported
    callback.on_epoch_end(2, {"val_accuracy": 0.75})
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    # As cloudml-hypertune writes them: sorted keys, the value and step as strings, the trial id.
    assert list(json.loads(lines[1])) == ["global_step", "timestamp", "trial", "val_accuracy"]
    assert json.loads(lines[1]) | {"timestamp": 0} == {
        "global_step": "3",
        "timestamp": 0,
        "trial": "3",
        "val_accuracy": "0.75",
    }


def test_keeps_the_last_100_reports(tmp_path):
    reporter = hypertune.Reporter("loss", str(tmp_path / "m"), "0")
    for step in range(120):
        reporter.report(step, step)
    lines = (tmp_path / "m").read_text().splitlines()
    assert len(lines) == 100 and json.loads(lines[0])["global_step"] == "20"


def test_outside_a_study_nothing_is_reported():
    assert hypertune.from_env({}) is None
    assert hypertune.from_env({"CLOUD_ML_HP_METRIC_FILE": "/tmp/x"}) is None
