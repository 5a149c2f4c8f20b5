"""The HyperparameterTuningJob built for Vertex, and the checks on a study's props."""

import pytest
from google.cloud import aiplatform_v1
from pulumi.output import Unknown

from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.tuning import spec as tuning_spec
from tests.vertex.props import custom_job_request, tuning_job_request
from tests.vertex.tuning_props import tuning_props

StudySpec = aiplatform_v1.StudySpec
ParameterSpec = StudySpec.ParameterSpec


def built(**overrides) -> aiplatform_v1.HyperparameterTuningJob:
    props = tuning_spec.with_defaults(tuning_props(**overrides))
    assert tuning_spec.validate(props) == []
    return tuning_job_request(props)


def test_parameter_specs_are_exactly_the_aiplatform_v1_types():
    job = built()
    assert list(job.study_spec.parameters) == [
        ParameterSpec(
            parameter_id="learning-rate",
            double_value_spec=ParameterSpec.DoubleValueSpec(min_value=0.0001, max_value=0.1),
            scale_type=ParameterSpec.ScaleType.UNIT_LOG_SCALE,
        ),
        # DiscreteValueSpec wants its values in increasing order.
        ParameterSpec(
            parameter_id="batch-size",
            discrete_value_spec=ParameterSpec.DiscreteValueSpec(values=[16.0, 32.0]),
            scale_type=ParameterSpec.ScaleType.UNIT_LINEAR_SCALE,
        ),
        ParameterSpec(
            parameter_id="fine-tune-epochs",
            integer_value_spec=ParameterSpec.IntegerValueSpec(min_value=0, max_value=3),
            scale_type=ParameterSpec.ScaleType.UNIT_LINEAR_SCALE,
        ),
        # CATEGORICAL: scale_type left unset, as StudySpec documents.
        ParameterSpec(
            parameter_id="backbone",
            categorical_value_spec=ParameterSpec.CategoricalValueSpec(values=["densenet121", "resnet50"]),
        ),
    ]
    # Each spec survives the wire as the same message.
    for parameter in job.study_spec.parameters:
        assert ParameterSpec.deserialize(ParameterSpec.serialize(parameter)) == parameter


def test_study_counts_metric_and_algorithm_map_to_vertex_enums():
    job = built(goal="MINIMIZE", metric_id="val_loss")
    assert job.study_spec.metrics == [
        StudySpec.MetricSpec(metric_id="val_loss", goal=StudySpec.MetricSpec.GoalType.MINIMIZE)
    ]
    assert (job.max_trial_count, job.parallel_trial_count, job.max_failed_trial_count) == (4, 2, 2)
    assert job.study_spec.algorithm == StudySpec.Algorithm.RANDOM_SEARCH
    grid = [{"parameter_id": "batch-size", "type": "DISCRETE", "values": [16, 32]}]
    assert built(algorithm="grid", parameters=grid).study_spec.algorithm == StudySpec.Algorithm.GRID_SEARCH
    assert built(algorithm="default").study_spec.algorithm == StudySpec.Algorithm.ALGORITHM_UNSPECIFIED


def test_trial_job_spec_is_the_custom_job_spec_of_the_same_props():
    props = tuning_spec.with_defaults(tuning_props())
    job = tuning_job_request(props)
    trial = {k: v for k, v in props.items() if k not in tuning_spec.STUDY_INPUTS}
    assert job.trial_job_spec == custom_job_request(trial).job_spec
    assert job.trial_job_spec.base_output_directory.output_uri_prefix == "gs://demo-bucket/runs/1"
    assert job.labels[KEY_LABEL] == tuning_spec.job_key(props)
    # The study is part of the key: another parameter list is another study.
    other = tuning_spec.with_defaults(tuning_props(max_trial_count=6))
    assert tuning_spec.job_key(other) != tuning_spec.job_key(props)
    assert tuning_spec.job_key({**props, "poll_interval_seconds": 5}) == tuning_spec.job_key(props)


def one(pid: str, kind: str, **spec) -> dict:
    return {"parameters": [{"parameter_id": pid, "type": kind, **spec}]}


@pytest.mark.parametrize(
    ("overrides", "prop", "words"),
    [
        ({"metric_id": "val accuracy"}, "metric_id", "reported metric"),
        ({"goal": "BIGGER"}, "goal", "MAXIMIZE, MINIMIZE"),
        ({"algorithm": "bayes"}, "algorithm", "default, grid, random"),
        ({"parallel_trial_count": 5}, "parallel_trial_count", "exceeds max_trial_count (4)"),
        ({"max_trial_count": 0}, "max_trial_count", ">= 1"),
        ({"parameters": []}, "parameters", "at least one"),
        (one("lr", "DOUBLE", min=0.1, max=0.01), "parameters[0]", "above max"),
        (one("lr", "DOUBLE", min=0, max=1, scale="UNIT_LOG_SCALE"), "parameters[0]", "strictly positive"),
        (one("b", "INTEGER", min=1.5, max=3), "parameters[0]", "numeric min and max"),
        (one("b", "DISCRETE", values=["16"]), "parameters[0]", "must be numbers"),
        (one("b", "CATEGORICAL", values=["a"], scale="UNIT_LOG_SCALE"), "parameters[0].scale", "no scale"),
        (one("b", "WHOLE", values=[1]), "parameters[0].type", "DOUBLE, INTEGER"),
        ({"algorithm": "grid"}, "algorithm", "learning-rate is a DOUBLE range"),
    ],
)  # fmt: skip
def test_check_names_the_bad_study_prop(overrides, prop, words):
    failures = tuning_spec.validate(tuning_spec.with_defaults(tuning_props(**overrides)))
    assert [(p, reason) for p, reason in failures if p == prop and words in reason], failures


def test_trial_job_props_are_checked_as_a_custom_job():
    failures = tuning_spec.validate(tuning_spec.with_defaults(tuning_props(base_output_dir="/tmp/x")))
    assert [p for p, _ in failures] == ["base_output_dir"]


def test_preview_unknowns_pass_check():
    props = tuning_spec.with_defaults(
        tuning_props(parameters=[Unknown()], metric_id=Unknown(), base_output_dir=Unknown())
    )
    assert tuning_spec.validate(props) == []
