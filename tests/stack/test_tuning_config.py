"""`tuning` and `trainWithBest`: the study's shape, and errors that name `tuning` and the entry."""

from __future__ import annotations

import json

import pytest

from infra.config import ConfigError, load_config
from infra.config.tuning import TunedParameter

STUDY = {
    "metric": "val_accuracy",
    "goal": "MAXIMIZE",
    "algorithm": "grid",
    "maxTrials": 4,
    "parallelTrials": 2,
    "parameters": {
        "learningRate": {"values": [0.01, 0.001]},
        "batchSize": {"values": [16, 32]},
        "fineTuneEpochs": {"min": 0, "max": 3},
    },
}


def tuning(study: dict | str | None = None, **values: object):
    config = {f"vertex-training:{k}": v for k, v in values.items()}
    if study is not None:
        config["vertex-training:tuning"] = study
    return load_config(config, "local").tuning


def test_the_contract_shape_reads_into_vertex_parameter_types():
    study = tuning(STUDY, trainWithBest=True)
    assert (study.metric, study.goal, study.algorithm, study.max_trials, study.parallel_trials) == (
        "val_accuracy",
        "MAXIMIZE",
        "grid",
        4,
        2,
    )
    assert study.train_with_best and study.max_failed_trials == 0
    assert study.parameters == (
        TunedParameter("learningRate", "learning-rate", "DISCRETE", values=(0.01, 0.001)),
        # Vertex passes DISCRETE values as doubles (--batch-size=16.0): whole numbers go as CATEGORICAL.
        TunedParameter("batchSize", "batch-size", "CATEGORICAL", values=("16", "32")),
        TunedParameter(
            "fineTuneEpochs", "fine-tune-epochs", "INTEGER", min=0, max=3, scale="UNIT_LINEAR_SCALE"
        ),
    )
    # The Pulumi runtime hands structured values over as JSON strings.
    assert tuning(json.dumps(STUDY)) == tuning(STUDY)


def test_ranges_scales_categories_and_defaults():
    study = tuning(
        {
            "metric": "val_loss",
            "maxTrials": 3,
            "parameters": {
                "learningRate": {"min": 0.0001, "max": 0.1, "scale": "log"},
                "backbone": {"values": ["densenet121", "resnet50"]},
            },
        }
    )
    assert study.goal == "MINIMIZE" and study.algorithm == "default" and study.parallel_trials == 1
    assert study.parameters[0] == TunedParameter(
        "learningRate", "learning-rate", "DOUBLE", min=0.0001, max=0.1, scale="UNIT_LOG_SCALE"
    )
    assert study.parameters[1].type == "CATEGORICAL"


def with_parameters(**parameters: object) -> dict:
    return {**STUDY, "parameters": parameters}


@pytest.mark.parametrize(
    ("study", "words"),
    [
        (with_parameters(dropout={"values": [0.1]}), "parameters.dropout: 'dropout' cannot be tuned"),
        (with_parameters(epochs={"values": []}), "parameters.epochs: values must be a non-empty list"),
        (with_parameters(epochs={"min": 3, "max": 3}), "parameters.epochs: min 3 must be below max 3"),
        (with_parameters(epochs={"min": 5, "max": 2}), "an empty or reversed range"),
        (with_parameters(batchSize={"values": [16, "32"]}), "batchSize: '32' is not a whole number"),
        (with_parameters(batchSize={"values": [16.5]}), "16.5 is not a whole number"),
        (with_parameters(learningRate={"values": [True]}), "True is not a number"),
        (with_parameters(learningRate={"values": [2.0]}), "outside (0, 1]"),
        (with_parameters(backbone={"values": ["vgg"]}), "'vgg' is not one of densenet121"),
        (with_parameters(backbone={"min": 1, "max": 2}), "backbone takes values, not a range"),
        (with_parameters(learningRate={"min": 0.001, "max": 0.1, "scale": "log10"}), "scale 'log10'"),
        (
            with_parameters(learningRate={"min": 0.001, "max": 0.1}),
            "grid search needs values for learningRate",
        ),
        (with_parameters(epochs=[1, 2]), "expected {values: [...]} or {min, max[, scale]}"),
        ({**STUDY, "parallelTrials": 5}, "parallelTrials: 5 parallel trials is more than maxTrials 4"),
        ({**STUDY, "metric": "f1"}, "metric: the trainer does not report 'f1'"),
        ({**STUDY, "goal": "max"}, "goal: 'max' is not one of MAXIMIZE, MINIMIZE"),
        ({**STUDY, "algorithm": "bayesian"}, "algorithm: 'bayesian' is not one of default, grid, random"),
        ({**STUDY, "maxTrials": 0}, "maxTrials: must be a whole number >= 1"),
        ({k: v for k, v in STUDY.items() if k != "maxTrials"}, "maxTrials: is required"),
        ({**STUDY, "trials": 4}, "trials: is not a tuning entry"),
        ({**STUDY, "parameters": {}}, "parameters: expected a map"),
        ("not json", "tuning: expected a map"),
    ],
)
def test_errors_name_tuning_and_the_entry(study, words):
    with pytest.raises(ConfigError) as raised:
        tuning(study)
    assert raised.value.key == "tuning"
    assert str(raised.value).startswith("vertex-training:tuning: ") and words in str(raised.value)


def test_train_with_best_needs_a_study():
    with pytest.raises(ConfigError, match="vertex-training:trainWithBest: needs a study"):
        tuning(None, trainWithBest=True)
    assert tuning(None) is None
