"""The local runner's grid and seeded random search over a StudySpec's parameters."""

import math

from google.cloud import aiplatform_v1

from infra.vertex.runners.local import search
from infra.vertex.tuning import spec as tuning_spec

ParameterSpec = aiplatform_v1.StudySpec.ParameterSpec


def specs(*parameters: dict) -> list[ParameterSpec]:
    return [tuning_spec.parameter_spec(p) for p in parameters]


def test_grid_varies_the_first_parameter_slowest_and_stops_at_max_trials():
    parameters = specs(
        {"parameter_id": "lr", "type": "DISCRETE", "values": [0.01, 0.001]},
        {"parameter_id": "epochs", "type": "INTEGER", "min": 1, "max": 2},
        {"parameter_id": "backbone", "type": "CATEGORICAL", "values": ["resnet50"]},
    )
    assert search.grid(parameters, 3) == [
        {"lr": 0.001, "epochs": 1, "backbone": "resnet50"},
        {"lr": 0.001, "epochs": 2, "backbone": "resnet50"},
        {"lr": 0.01, "epochs": 1, "backbone": "resnet50"},
    ]
    assert len(search.grid(parameters, 10)) == 4  # the whole grid, no repeats


def test_random_search_is_seeded_and_stays_in_the_feasible_space():
    parameters = specs(
        {"parameter_id": "lr", "type": "DOUBLE", "min": 1e-5, "max": 1e-1, "scale": "UNIT_LOG_SCALE"},
        {"parameter_id": "epochs", "type": "INTEGER", "min": 1, "max": 5},
        {"parameter_id": "batch", "type": "DISCRETE", "values": [16, 32]},
    )
    points = search.random_points(parameters, 200, seed=7)
    assert points == search.random_points(parameters, 200, seed=7)
    assert points != search.random_points(parameters, 200, seed=8)
    assert all(1e-5 <= p["lr"] <= 1e-1 and 1 <= p["epochs"] <= 5 and p["batch"] in (16, 32) for p in points)
    # Log scale: about as many draws per decade (a linear draw would put ~90% in the top decade).
    top_decade = sum(p["lr"] > 1e-2 for p in points)
    assert 20 < top_decade < 80
    assert {p["epochs"] for p in points} == {1, 2, 3, 4, 5}
    assert not any(math.isnan(p["lr"]) for p in points)


def test_default_algorithm_searches_at_random_locally():
    study = aiplatform_v1.StudySpec(
        parameters=specs({"parameter_id": "lr", "type": "DOUBLE", "min": 0.1, "max": 0.2}),
        algorithm=aiplatform_v1.StudySpec.Algorithm.ALGORITHM_UNSPECIFIED,
    )
    points = search.suggestions(study, 3, seed=1)
    assert len(points) == 3 and len({p["lr"] for p in points}) == 3
