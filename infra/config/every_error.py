"""Every problem of a stack's configuration in one run, with each check written once (raising ConfigError).

The loader runs again with each reported key left out, so it falls back to the key's default and the checks
after it run too; a later problem that names a key already reported follows from that one and is not
reported again. A key whose absence is itself a problem (gcpProject, billingAccount on a cloud stack) stands
in with a valid value (STAND_INS) for the next pass; the configuration of such a pass is never used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from infra.config.reader import NAMESPACE, ConfigError, problems, raise_all

T = TypeVar("T")

# Values that let a pass go on past a required key already reported (never built, never shown).
STAND_INS: dict[str, object] = {"gcpProject": "stand-in-project", "billingAccount": "000000-000000-000000"}
# One pass per reported key at most; a stack file has fewer keys than this.
MAX_PASSES = 100


def top_key(key: str) -> str:
    """The stack key an error names: `fallbacks` for `fallbacks[1].region`, `tuning` for `tuning.x`."""
    return key.split(".", 1)[0].split("[", 1)[0]


def _set_aside(values: dict[str, object], key: str) -> bool:
    """Leave `key` out of the next pass (or give it its stand-in); False when nothing could change."""
    name = f"{NAMESPACE}:{key}"
    if name in values and values[name] != STAND_INS.get(key, values[name]):
        values[name] = STAND_INS[key]
        return True
    if name in values and key not in STAND_INS:
        del values[name]
        return True
    if name not in values and key in STAND_INS:
        values[name] = STAND_INS[key]
        return True
    return False


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
                if not keys & before:  # else it follows from a problem already reported
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
