"""The local runner's suggestions over a Vertex StudySpec's parameters: grid, or random with a seed (also for
Vertex's default algorithm, Bayesian optimization, which has no offline twin; the local runner says so)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from google.cloud import aiplatform_v1

ParameterSpec = aiplatform_v1.StudySpec.ParameterSpec
Point = dict[str, float | int | str]


def _choices(parameter: ParameterSpec) -> list[float | int | str]:
    if "discrete_value_spec" in parameter:
        return list(parameter.discrete_value_spec.values)
    if "categorical_value_spec" in parameter:
        return list(parameter.categorical_value_spec.values)
    if "integer_value_spec" in parameter:
        spec = parameter.integer_value_spec
        return list(range(spec.min_value, spec.max_value + 1))
    raise ValueError(f"grid search cannot enumerate DOUBLE parameter {parameter.parameter_id!r}")


def grid(parameters: Sequence[ParameterSpec], max_trials: int) -> list[Point]:
    """The grid's points in order (the first parameter varies slowest), at most `max_trials` of them."""
    ids = [p.parameter_id for p in parameters]
    points = itertools.product(*(_choices(p) for p in parameters))
    return [dict(zip(ids, values, strict=True)) for values in itertools.islice(points, max_trials)]


def _scaled(rng: random.Random, low: float, high: float, scale: ParameterSpec.ScaleType) -> float:
    if scale == ParameterSpec.ScaleType.UNIT_LOG_SCALE:
        return math.exp(rng.uniform(math.log(low), math.log(high)))
    if scale == ParameterSpec.ScaleType.UNIT_REVERSE_LOG_SCALE:
        # Dense near the top of the range: the mirror image of a log draw.
        return high + low - math.exp(rng.uniform(math.log(low), math.log(high)))
    return rng.uniform(low, high)


def _draw(rng: random.Random, parameter: ParameterSpec) -> float | int | str:
    if "double_value_spec" in parameter:
        spec = parameter.double_value_spec
        return _scaled(rng, spec.min_value, spec.max_value, parameter.scale_type)
    if "integer_value_spec" in parameter:
        spec = parameter.integer_value_spec
        value = round(_scaled(rng, spec.min_value, spec.max_value, parameter.scale_type))
        return min(max(value, spec.min_value), spec.max_value)
    return rng.choice(_choices(parameter))


def random_points(parameters: Sequence[ParameterSpec], count: int, seed: int) -> list[Point]:
    """`count` independent draws over the feasible space; the same seed gives the same points."""
    rng = random.Random(seed)
    return [{p.parameter_id: _draw(rng, p) for p in parameters} for _ in range(count)]


def suggestions(study: aiplatform_v1.StudySpec, max_trials: int, seed: int) -> list[Point]:
    """What the local runner tries, in order, for this study."""
    if study.algorithm == aiplatform_v1.StudySpec.Algorithm.GRID_SEARCH:
        return grid(study.parameters, max_trials)
    return random_points(study.parameters, max_trials, seed)
