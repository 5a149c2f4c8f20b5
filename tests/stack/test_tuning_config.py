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


def path_fix(path: str, value: object) -> str:
    return f"run `pulumi config set --stack local --path 'vertex-training:tuning.{path}' {value}`"


# Each rule: its problem, and its own fix (the command that sets the entry right, or what to rename).
RULES = [
    (
        with_parameters(dropout={"values": [0.1]}),
        "parameters.dropout: 'dropout' cannot be tuned",
        "use one of learningRate, batchSize",
    ),
    (
        with_parameters(learning_rate={"values": [0.1]}),
        "'learning_rate' cannot be tuned",
        "did you mean learningRate? rename learning_rate to learningRate under "
        "vertex-training:tuning.parameters",
    ),
    (
        with_parameters(epochs={"values": []}),
        "parameters.epochs: values must be a non-empty list",
        path_fix("parameters.epochs.values[0]", 2),
    ),
    (
        with_parameters(epochs={"values": [2, "2"]}),
        "lists 2 twice",
        "remove one 2 from vertex-training:tuning.parameters.epochs.values",
    ),
    (
        with_parameters(epochs={"min": 3, "max": 3}),
        "parameters.epochs: min 3 must be below max 3",
        path_fix("parameters.epochs.max", 4),
    ),
    (
        with_parameters(epochs={"min": 5, "max": 2}),
        "an empty or reversed range",
        f"{path_fix('parameters.epochs.min', 2)} and {path_fix('parameters.epochs.max', 5)}",
    ),
    (
        with_parameters(batchSize={"values": [16, "big"]}),
        "batchSize.values[1]: 'big' is not a whole number",
        f"give batchSize whole numbers, e.g. {path_fix('parameters.batchSize.values[1]', 2)}",
    ),
    (
        with_parameters(batchSize={"values": [16.5]}),
        "16.5 is not a whole number",
        path_fix("parameters.batchSize.values[0]", 2),
    ),
    (
        with_parameters(learningRate={"values": [True]}),
        "True is not a number",
        path_fix("parameters.learningRate.values[0]", 0.01),
    ),
    (
        with_parameters(learningRate={"values": [2.0]}),
        "outside (0, 1]",
        path_fix("parameters.learningRate.values[0]", 0.01),
    ),
    (
        with_parameters(epochs={"values": [0]}),
        "0 is below 1, the smallest epochs",
        path_fix("parameters.epochs.values[0]", 1),
    ),
    (
        with_parameters(backbone={"values": ["resnet"]}),
        "'resnet' is not one of densenet121",
        f"did you mean resnet50? {path_fix('parameters.backbone.values[0]', 'resnet50')}",
    ),
    (
        with_parameters(backbone={"min": 1, "max": 2}),
        "backbone takes values, not a range",
        path_fix("parameters.backbone.values[0]", "densenet121"),
    ),
    (
        with_parameters(learningRate={"min": 0.001, "max": 0.1, "scale": "reverse_log"}),
        "scale 'reverse_log'",
        path_fix("parameters.learningRate.scale", "reverseLog"),
    ),
    (
        {
            **STUDY,
            "algorithm": "random",
            "parameters": {"learningRate": {"min": 0, "max": 0.1, "scale": "log"}},
        },
        "parameters.learningRate.min: 0 is outside (0, 1]",
        path_fix("parameters.learningRate.min", 0.01),
    ),
    (
        with_parameters(fineTuneEpochs={"min": 0, "max": 3, "scale": "log"}),
        "parameters.fineTuneEpochs: a log scale needs min above 0, got 0",
        f"{path_fix('parameters.fineTuneEpochs.min', 1)} or "
        f"{path_fix('parameters.fineTuneEpochs.scale', 'linear')}",
    ),
    (
        with_parameters(learningRate={"min": 0.001, "max": 0.1}),
        "grid search needs values for learningRate",
        path_fix("algorithm", "random"),
    ),
    (
        with_parameters(epochs=[1, 2]),
        "expected {values: [...]} or {min, max[, scale]}",
        f"{path_fix('parameters.epochs.values[0]', 2)} and {path_fix('parameters.epochs.values[1]', 4)}",
    ),
    (
        {**STUDY, "parallelTrials": 5},
        "parallelTrials: 5 parallel trials is more than maxTrials 4",
        f"set parallelTrials <= 4: {path_fix('parallelTrials', 4)}",
    ),
    (
        {**STUDY, "maxTrials": 2, "parallelTrials": 3},
        "parallelTrials: 3 parallel trials is more than maxTrials 2",
        f"set parallelTrials <= 2: {path_fix('parallelTrials', 2)} (or allow more trials: "
        f"{path_fix('maxTrials', 3)})",
    ),
    (
        {**STUDY, "metric": "f1"},
        "metric: the trainer does not report 'f1'",
        path_fix("metric", "val_accuracy"),
    ),
    ({**STUDY, "metric": "valloss"}, "does not report 'valloss'", path_fix("metric", "val_loss")),
    ({**STUDY, "goal": "max"}, "goal: 'max' is not one of MAXIMIZE, MINIMIZE", path_fix("goal", "MAXIMIZE")),
    (
        {**STUDY, "metric": "val_loss", "goal": "lowest"},
        "goal: 'lowest' is not one of",
        path_fix("goal", "MINIMIZE"),
    ),
    (
        {**STUDY, "algorithm": "grid_search"},
        "algorithm: 'grid_search' is not one of default, grid, random",
        path_fix("algorithm", "grid"),
    ),
    ({**STUDY, "maxTrials": 0}, "maxTrials: must be a whole number >= 1", path_fix("maxTrials", 4)),
    (
        {k: v for k, v in STUDY.items() if k != "maxTrials"},
        "maxTrials: is required",
        path_fix("maxTrials", 4),
    ),
    (
        {**STUDY, "maxFailedTrials": -1},
        "maxFailedTrials: must be a whole number >= 0",
        path_fix("maxFailedTrials", 1),
    ),
    (
        {**STUDY, "max_trials": 4},
        "max_trials: is not a tuning entry",
        "did you mean maxTrials? rename max_trials to maxTrials under vertex-training:tuning",
    ),
    (
        {**STUDY, "parameters": {}},
        "parameters: expected a map",
        path_fix("parameters.learningRate.values[0]", 0.01),
    ),
    ("{metric: val_accuracy}", "tuning: expected a map", path_fix("metric", "val_accuracy")),
]


@pytest.mark.parametrize(("study", "words", "fix"), RULES, ids=[r[1][:40] for r in RULES])
def test_each_rule_names_tuning_the_entry_and_its_own_fix(study, words, fix):
    with pytest.raises(ConfigError) as raised:
        tuning(study)
    message = str(raised.value)
    assert raised.value.key == "tuning"
    assert message.startswith("vertex-training:tuning: ") and words in message, message
    assert fix in message.split(". Fix: ", 1)[1], message


@pytest.mark.parametrize(
    ("key", "value", "fixed"),
    [
        ("learningRate", 1, ("min", 0.1)),  # max cannot go above 1: min comes down
        ("learningRate", 0.5, ("max", 1)),
        ("learningRate", 0.01, ("max", 0.1)),
        ("epochs", 3, ("max", 4)),
    ],
)
def test_an_empty_range_is_told_a_fix_that_makes_min_below_max(key, value, fixed):
    study = {
        **with_parameters(**{**STUDY["parameters"], key: {"min": value, "max": value}}),
        "algorithm": "random",
    }
    with pytest.raises(ConfigError) as raised:
        tuning(study)
    end, number = fixed
    assert raised.value.fix == path_fix(f"parameters.{key}.{end}", number)
    # The fix, applied, loads.
    study["parameters"][key] = {"min": value, "max": value, end: number}
    [parameter] = [p for p in tuning(study).parameters if p.key == key]
    assert parameter.min < parameter.max


def path_entries_as_pulumi_stores_them(entries: dict[str, str]) -> str:
    """`pulumi config set --path 'vertex-training:tuning.<path>' <value>` for each entry, as the program then
    receives the key: a JSON object in which "true"/"false" are booleans, integers are numbers and "All other
    values are treated as strings" (`pulumi config set --help`; pulumi/pulumi sdk/go/common/resource/config
    object.go `coerce`, read 2026-11-25). Paths here use `.name` and `[index]` only."""
    import re

    root: dict = {}
    for path, text in entries.items():
        value: object = {"true": True, "false": False}.get(text, text)
        if re.fullmatch(r"-?[1-9][0-9]*|0", text):
            value = int(text)
        steps = [int(s[1:-1]) if s.startswith("[") else s for s in re.findall(r"\[\d+\]|[^.\[\]]+", path)]
        node: dict | list = root
        for step, following in zip(steps, [*steps[1:], None], strict=True):
            if following is None:
                if isinstance(node, list):
                    node.extend([None] * (step + 1 - len(node)))
                node[step] = value
            else:
                blank = [] if isinstance(following, int) else {}
                if isinstance(node, list):
                    node.extend([None] * (step + 1 - len(node)))
                    node[step] = node[step] if node[step] is not None else blank
                else:
                    node.setdefault(step, blank)
                node = node[step]
    return json.dumps(root)


def test_a_study_set_with_path_entries_loads_like_the_yaml_map():
    """docs/tuning.md's commands: floats arrive as strings ("0.01"), whole numbers as numbers."""
    stored = path_entries_as_pulumi_stores_them(
        {
            "metric": "val_accuracy",
            "goal": "MAXIMIZE",
            "algorithm": "grid",
            "maxTrials": "4",
            "parallelTrials": "2",
            "parameters.learningRate.values[0]": "0.01",
            "parameters.learningRate.values[1]": "0.001",
            "parameters.batchSize.values[0]": "16",
            "parameters.batchSize.values[1]": "32",
            "parameters.fineTuneEpochs.min": "0",
            "parameters.fineTuneEpochs.max": "3",
        }
    )
    assert json.loads(stored)["parameters"]["learningRate"] == {"values": ["0.01", "0.001"]}
    assert tuning(stored) == tuning(STUDY)


def test_a_study_given_as_a_json_string_loads():
    """`pulumi config set vertex-training:tuning '<JSON>'` stores a string; the program parses it."""
    assert tuning(json.dumps(STUDY)) == tuning(STUDY)


def test_train_with_best_needs_a_study():
    with pytest.raises(ConfigError, match="vertex-training:trainWithBest: needs a study"):
        tuning(None, trainWithBest=True)
    assert tuning(None) is None
