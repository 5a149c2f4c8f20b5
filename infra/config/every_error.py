"""Every problem of a stack's configuration in one run, with each check written once (raising ConfigError).

The loader runs again with each reported key left out, so it falls back to the key's default and the checks
after it run too. A later problem is not reported when it names a reported key or a key whose check reads one
(READS): the default standing in may be what it refuses. A key whose absence is itself a problem
(gcpProject, billingAccount on a cloud stack) gets a valid stand-in (STAND_INS) for the next pass; the
configuration of such a pass is never used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from infra.config import capacity, data, hyperparameters, trainer, tuning
from infra.config.reader import NAMESPACE, ConfigError, problems, raise_all

T = TypeVar("T")

# Values that let a pass go on past a required key already reported (never built, never shown).
STAND_INS: dict[str, object] = {"gcpProject": "stand-in-project", "billingAccount": "000000-000000-000000"}
# The training job's shapes: each fallback and capacity key is checked against the chief's machine and region.
_SHAPES = frozenset(
    {"machineType", "acceleratorType", "acceleratorCount", "workerCount", "spot", "region", "timeoutSeconds"}
) | frozenset(capacity.KEYS)
_DATA_SOURCE = frozenset({"dataSource"})
# Key -> the other keys its checks read (every check reads `runner`, so a reported runner hides the rest).
READS: dict[str, frozenset[str]] = {
    "acceleratorCount": frozenset({"acceleratorType", "machineType"}),
    "acceleratorType": frozenset({"machineType", "acceleratorCount", "region"}),
    "machineType": frozenset({"acceleratorType", "acceleratorCount"}),
    **{key: _SHAPES for key in capacity.KEYS},
    **{key: _DATA_SOURCE for key in ("dataFolder", "tfdsName", "dataReplicas", "dataDir", "dataCount")},
    **{
        key: frozenset(hyperparameters.KEYS) | frozenset(data.KEYS) | frozenset(trainer.KEYS)
        for key in trainer.KEYS
    },
    **{
        key: frozenset(hyperparameters.KEYS) | frozenset(trainer.KEYS) | frozenset(tuning.KEYS)
        for key in tuning.KEYS
    },
    "experiment": frozenset({"tensorboard"}),
    "endpoint": frozenset({"registerModel", "region", "allowUnpricedShapes"}),
}
ALWAYS_READ = frozenset({"runner"})
# One pass per reported key at most; a stack file has fewer keys than this.
MAX_PASSES = 100


def top_key(key: str) -> str:
    """The stack key an error names: `fallbacks` for `fallbacks[1].region`, `tuning` for `tuning.x`."""
    return key.split(".", 1)[0].split("[", 1)[0]


def _follows(keys: set[str], reported: set[str]) -> bool:
    """A problem at `keys` may come from a reported key's default: it names or reads one."""
    reads = set().union(*(READS.get(key, frozenset()) for key in keys))
    return bool(reported & (keys | reads | ALWAYS_READ))


def _set_aside(values: dict[str, object], key: str) -> bool:
    """Leave `key` out of the next pass, or give it its stand-in; False when that changes nothing."""
    name = f"{NAMESPACE}:{key}"
    stand_in = STAND_INS.get(key)
    if stand_in is not None:
        changed = values.get(name) != stand_in
        values[name] = stand_in
        return changed
    if name not in values:
        return False
    del values[name]
    return True


def load_every_error(
    load: Callable[[Mapping[str, object]], T],
    values: Mapping[str, object],
    found: list[ConfigError] | None = None,
) -> T:
    """`load(values)`, or ConfigErrors with every problem it finds (`found`: problems found before it)."""
    found = list(found or [])
    remaining = dict(values)
    reported: set[str] = set()
    for _ in range(MAX_PASSES):
        try:
            loaded = load(remaining)
        except ConfigError as error:
            before, moved = set(reported), False
            for problem in problems(error):
                keys = {top_key(key) for key in problem.keys}
                if not _follows(keys, before):
                    found.append(problem)
                reported |= keys
                moved = any([_set_aside(remaining, key) for key in sorted(keys)]) or moved
            if not moved:
                break
            continue
        if not found:
            return loaded
        break
    raise_all(found)
    raise AssertionError("unreachable: a failed load reports its problem")
