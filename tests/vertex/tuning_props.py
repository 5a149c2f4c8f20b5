"""Tuning-job props for tests: a small valid study over the CustomJob test props, with overrides."""

from typing import Any

from tests.vertex.props import job_props

PARAMETERS = [
    {"parameter_id": "learning-rate", "type": "DOUBLE", "min": 0.0001, "max": 0.1, "scale": "UNIT_LOG_SCALE"},
    {"parameter_id": "batch-size", "type": "DISCRETE", "values": [32, 16]},
    {"parameter_id": "fine-tune-epochs", "type": "INTEGER", "min": 0, "max": 3},
    {"parameter_id": "backbone", "type": "CATEGORICAL", "values": ["densenet121", "resnet50"]},
]


def tuning_props(**overrides: Any) -> dict[str, Any]:
    study = {
        "metric_id": "val_accuracy",
        "goal": "MAXIMIZE",
        "algorithm": "random",
        "parameters": PARAMETERS,
        "max_trial_count": 4,
        "parallel_trial_count": 2,
        "max_failed_trial_count": 2,
    }
    return job_props(**{"display_name": "tune-densenet", **study, **overrides})
