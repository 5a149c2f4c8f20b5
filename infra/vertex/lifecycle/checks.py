"""The checks every job kind runs on its props before anything is created, and the key label. A failure is
(property, reason), so that a stack error can name the config key; a preview's unknown values are skipped."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.capacity import reservations
from infra.vertex.lifecycle import restarts, spend

# Vertex list filters name this key (`labels.<key>="<value>"`); keys in filters use only [a-z0-9_].
KEY_LABEL = "vertex_training_key"
RUNNERS = ("vertex", "local")
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
MAX_LABELS = 64
Failures = list[tuple[str, str]]


def job_key(props: Mapping[str, Any], inputs: Iterable[str], in_place: frozenset[str]) -> str:
    """Deterministic label value naming the inputs that define what a job computes: the same inputs find
    the same job (adoption after an interrupted `pulumi up`)."""
    defining = {k: props[k] for k in inputs if k in props and k not in in_place}
    canonical = json.dumps(defining, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:40]


def whole_numbers_as_int(value: Any) -> Any:
    """Pulumi sends every number as a double: 3600 arrives as 3600.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: whole_numbers_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers_as_int(v) for v in value]
    return value


def _known(props: Mapping[str, Any], key: str) -> bool:
    return key in props and not is_unknown(props[key])


def whole_number_failures(props: Mapping[str, Any], key: str, minimum: int) -> Failures:
    """A given `key` that is not a whole number >= minimum."""
    value = props.get(key)
    return [] if value is None or is_unknown(value) else whole_number_value_failures(key, value, minimum)


def whole_number_value_failures(key: str, value: object, minimum: int) -> Failures:
    """`value` (of `key`) that is not a whole number >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return [(key, f"{key} must be a whole number >= {minimum}, not {value!r}")]
    return []


def _positive_failures(key: str, value: object, what: str = "a positive number") -> Failures:
    """`value` (of `key`) that is not a positive number; `what`: how the message names one."""
    if not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
        return []
    return [(key, f"{key} must be {what}, not {value!r}")]


def timeout_failures(value: object) -> Failures:
    return _positive_failures("timeout_seconds", value)


def seconds_value_failures(key: str, value: object, zero: str) -> Failures:
    """`value` (of `key`) that is not a whole number of seconds >= 0 (`zero`: what 0 means)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return [(key, f"{key} must be a whole number of seconds >= 0 (0: {zero}), not {value!r}")]
    return []


def common_failures(
    props: Mapping[str, Any], output_key: str, flags: tuple[str, ...] = ("wait",)
) -> Failures:
    """runner, the required strings (the output location `output_key` among them: gs:// on Vertex), the
    wait/poll/queue/timeout numbers, `flags` (booleans), labels, the dollar cap and the home region."""
    failures: Failures = []
    runner = props.get("runner")
    if _known(props, "runner") and runner not in RUNNERS:
        failures.append(("runner", f"runner must be one of {', '.join(RUNNERS)}, not {runner!r}"))
    cloud = runner == "vertex"
    required = ["display_name", output_key] + (["project", "region", "service_account"] if cloud else [])
    for key in required:
        if key in props and is_unknown(props[key]):
            continue
        if not isinstance(props.get(key), str) or not props[key]:
            failures.append((key, f"{key} is required (a non-empty string)"))
    name = props.get("display_name")
    if _known(props, "display_name") and isinstance(name, str) and len(name) > 128:
        failures.append(("display_name", "display_name must be at most 128 characters"))
    output_dir = props.get(output_key)
    if (
        cloud
        and _known(props, output_key)
        and isinstance(output_dir, str)
        and output_dir[:5] not in ("", "gs://")
    ):
        failures.append(
            (
                output_key,
                f"{output_key} {output_dir!r} must be a gs:// URI for the vertex runner "
                "(use runner 'local' for a local directory)",
            )
        )
    if _known(props, "timeout_seconds"):
        failures.extend(timeout_failures(props["timeout_seconds"]))
    elif "timeout_seconds" not in props:
        failures.append(
            ("timeout_seconds", "timeout_seconds is required: the hard cap on the job's run time")
        )
    if _known(props, "queue_timeout_seconds"):
        failures.extend(_positive_failures("queue_timeout_seconds", props["queue_timeout_seconds"]))
    if _known(props, "poll_interval_seconds"):
        failures.extend(
            _positive_failures("poll_interval_seconds", props["poll_interval_seconds"], "positive")
        )
    for flag in flags:
        if _known(props, flag) and not isinstance(props[flag], bool):
            failures.append((flag, f"{flag} must be true or false, not {props[flag]!r}"))
    if _known(props, "labels"):
        failures.extend(label_failures(props["labels"]))
    if _known(props, "max_cost_usd"):
        dollars = "a positive number of US dollars"
        failures.extend(_positive_failures("max_cost_usd", props["max_cost_usd"], dollars))
    region = props.get("region")
    if isinstance(region, str) and region:
        failures.extend(reservations.region_failures("region", region))
    return failures


def label_failures(
    labels: Any, reserved: tuple[str, ...] = (KEY_LABEL, restarts.ATTEMPT_LABEL, spend.SPENT_LABEL)
) -> Failures:
    """Vertex's label rules, with `reserved` keys (set by the provider) refused and counted."""
    if not isinstance(labels, Mapping):
        return [("labels", "labels must be a map of strings")]
    failures = []
    most = MAX_LABELS - len(reserved)
    if len(labels) > most:
        failures.append(("labels", f"at most {most} labels (the provider adds {', '.join(reserved)})"))
    for key, value in labels.items():
        if is_unknown(value):
            continue
        if key in reserved:
            failures.append(("labels", f"label {key!r} is reserved for the provider"))
        elif not _LABEL_KEY.fullmatch(str(key)):
            failures.append(
                (
                    "labels",
                    f"label key {key!r} is invalid: 1-63 lowercase letters, digits, '_' or '-', "
                    "starting with a letter",
                )
            )
        if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
            failures.append(
                (
                    "labels",
                    f"label value {value!r} (key {key!r}) is invalid: at most 63 lowercase letters, digits, "
                    "'_' or '-'",
                )
            )
    return failures
