"""Every machine shape of a stack checked on its own: the training job's (which its study shares), each
fallback, the data job's and the batch prediction's with its fallbacks.

Each shape's machine type is looked up in the machine facts (infra/vertex/capacity/machines.py): a type its
family does not have is a problem, with the closest type and the family's list; a well-formed type of a family
the facts lack gets a warning. A fallback's own GPU (its type, and the fit with its own machine type) is
checked without the job's shape, so a bad primary shape or region hides no fallback's problem.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from infra.config.reader import NAMESPACE, ConfigError
from infra.vertex.capacity import machines
from infra.vertex.capacity.shape_checks import accelerator_failures

DOCS = "docs/stack.md, 'Machine types'"
CUTOFF = 0.8  # a typo of a name this long; lower lets n1-standard-8 pass for e2-standard-4
GPU_DOCS = "see docs/training-job-resource.md, 'Getting a GPU: scheduling strategies and fallback shapes'"


@dataclass(frozen=True)
class ShapeEntry:
    key: str  # the error's key: machineType, fallbacks[1], batchPrediction.fallbacks[0]
    path: str  # where its machine type is set: machineType, fallbacks[1].machineType
    machine_type: object
    accelerator_type: object = None
    accelerator_count: object = None


def _entries(value: object) -> list[Mapping[str, Any]]:
    return [e if isinstance(e, Mapping) else {} for e in value] if isinstance(value, list) else []


def shapes(values: Mapping[str, object]) -> Iterator[ShapeEntry]:
    """Each shape the stack names a machine type or GPU in, as written (nothing inherited)."""

    def raw(key: str) -> object:
        return values.get(f"{NAMESPACE}:{key}")

    yield ShapeEntry("machineType", "machineType", raw("machineType"))
    yield ShapeEntry("dataMachineType", "dataMachineType", raw("dataMachineType"))
    for index, entry in enumerate(_entries(raw("fallbacks"))):
        where = f"fallbacks[{index}]"
        yield ShapeEntry(
            where,
            f"{where}.machineType",
            entry.get("machineType"),
            entry.get("acceleratorType"),
            entry.get("acceleratorCount"),
        )
    batch = raw("batchPrediction")
    if isinstance(batch, Mapping):
        yield ShapeEntry("batchPrediction", "batchPrediction.machineType", batch.get("machineType"))
        for index, entry in enumerate(_entries(batch.get("fallbacks"))):
            where = f"batchPrediction.fallbacks[{index}]"
            yield ShapeEntry(where, f"{where}.machineType", entry.get("machineType"))


def closest_machine_type(machine_type: str) -> str | None:
    """The listed type `machine_type` most likely meant (its own family's first), or None: nothing close,
    or a tie (n1-standard-5 is as near -4 as -8, and a wrong size is worse than none)."""
    family = machine_type.split("-", 1)[0]
    for candidates in (machines.MACHINE_TYPES.get(family, ()), sorted(machines.KNOWN_MACHINE_TYPES)):
        scored = sorted(
            ((difflib.SequenceMatcher(None, machine_type, c).ratio(), c) for c in candidates), reverse=True
        )
        best = [c for ratio, c in scored if ratio >= CUTOFF and ratio == scored[0][0]]
        if len(best) == 1:
            return best[0]
        if best:
            return None
    return None


def set_command(stack: str, path: str, value: str) -> str:
    """`pulumi config set` of one key, or with --path of one entry inside a list or map key."""
    nested = "." in path or "[" in path
    flags = f"--stack {stack}{' --path' if nested else ''}"
    return f"pulumi config set {flags} {shlex.quote(f'{NAMESPACE}:{path}')} {shlex.quote(value)}"


def _not_listed(value: str) -> str:
    family = value.split("-", 1)[0]
    listed = machines.MACHINE_TYPES.get(family)
    if listed:
        return f"{value!r} is not one of the {family} machine types ({', '.join(listed)})"
    return (
        f"{value!r} is not a machine type (<family>-<kind>-<size>, e.g. n1-standard-8; families: "
        f"{', '.join(machines.MACHINE_TYPES)})"
    )


def machine_type_error(shape: ShapeEntry, stack: str) -> ConfigError | None:
    """An unknown machine type of one shape, with the closest listed type and its family's list."""
    value = shape.machine_type
    if not isinstance(value, str) or not value or machines.machine_type_known(value) is not False:
        return None
    problem = _not_listed(value)
    hint = closest_machine_type(value)
    fix = (
        f"did you mean {hint}? run `{set_command(stack, shape.path, hint)}`"
        if hint
        else f"pick one of the machine types above ({DOCS})"
    )
    return ConfigError(shape.path, problem, fix)


def machine_type_warning(shape: ShapeEntry) -> str | None:
    """A well-formed type of a family the machine facts do not list: no verdict, said once."""
    value = shape.machine_type
    if not isinstance(value, str) or machines.machine_type_known(value) is not None:
        return None
    family = value.split("-", 1)[0]
    return (
        f"{NAMESPACE}:{shape.path} {value}: the {family} family is not in this project's machine facts "
        f"(infra/vertex/capacity/machines.py lists {', '.join(machines.MACHINE_TYPES)}), so its name, GPUs, "
        "quota and price are not checked; Vertex AI decides when the job is submitted"
    )


def fallback_gpu_error(shape: ShapeEntry) -> ConfigError | None:
    """A fallback's own GPU: its type, and its fit with its own machine type when it names both."""
    if not shape.key.startswith("fallbacks[") or shape.accelerator_type is None:
        return None
    own_type = shape.machine_type if isinstance(shape.machine_type, str) else None
    if own_type and machines.machine_type_known(own_type) is False:
        own_type = None  # reported as a machine type of its own
    machine = {
        "machine_type": own_type,
        "accelerator_type": shape.accelerator_type,
        "accelerator_count": shape.accelerator_count if shape.accelerator_count is not None else 1,
    }
    for prop, reason in accelerator_failures("", machine):
        if prop in ("accelerator_type", "machine_type"):
            return ConfigError(shape.key, reason, GPU_DOCS)
    return None


def shape_errors(values: Mapping[str, object], stack: str) -> list[ConfigError]:
    """Every shape's own problems, found without the rest of the configuration."""
    found = []
    for shape in shapes(values):
        found += [e for e in (machine_type_error(shape, stack), fallback_gpu_error(shape)) if e is not None]
    return found


def shape_warnings(values: Mapping[str, object]) -> list[str]:
    """One line per shape whose machine type is of a family the machine facts do not list."""
    return [w for w in map(machine_type_warning, shapes(values)) if w is not None]


def configured_shapes(cfg: Any) -> Iterator[ShapeEntry]:
    """The machine types of a loaded StackConfig's shapes, named by their stack keys."""
    yield ShapeEntry("machineType", "machineType", cfg.machine_type)
    yield ShapeEntry("dataMachineType", "dataMachineType", cfg.data_machine_type)
    for index, entry in enumerate(cfg.capacity.fallbacks):
        yield ShapeEntry(f"fallbacks[{index}]", f"fallbacks[{index}].machineType", entry.get("machine_type"))
    if cfg.batch_prediction is not None:
        yield ShapeEntry("batchPrediction", "batchPrediction.machineType", cfg.batch_prediction.machine_type)
        for index, entry in enumerate(cfg.batch_prediction.fallbacks):
            where = f"batchPrediction.fallbacks[{index}]"
            yield ShapeEntry(where, f"{where}.machineType", entry.get("machine_type"))


def config_warnings(cfg: Any) -> list[str]:
    """shape_warnings of a loaded StackConfig (what plan and preflight print)."""
    return list(dict.fromkeys(w for w in map(machine_type_warning, configured_shapes(cfg)) if w is not None))
