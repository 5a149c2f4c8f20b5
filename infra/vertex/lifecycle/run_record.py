"""run.json: what a finished job was, kept beside its outputs so every run stays comparable. Left out on
purpose: every pool's `env` (a user may pass a token there) and the other pools' args (the chief's say what
was trained); kept: the runtime service account, an identity's name (not a credential): who ran it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.output_files import join, write_text

RUN_FILE = "run.json"
# Bumped when a field changes meaning, for readers to tell the versions apart.
RECORD_VERSION = 1
# The outputs that describe a run (the contract's list), copied as they are when present.
RUN_OUTPUTS = (
    "job_name",
    "display_name",
    "state",
    "error",
    "console_url",
    "placement",
    "attempts",
    "duration_seconds",
    "estimated_cost_usd",
    "estimated_cost_bound",
    "cost_cap_reached",
    "metrics",
    "create_time",
    "start_time",
    "end_time",
    "model_dir",
    "base_output_dir",
    "runner",
    "project",
    "region",
    "service_account",
    "experiment",
    "experiment_run",
    # How the image was made, by digest: the builder that ran and each base image as resolved.
    "image_sources",
)
STACK_LABEL = "pulumi_stack"  # infra/labels.py stack_labels


class RecordKind(Protocol):
    """What run.json needs of a job's kind (lifecycle/kind.py Kind): its name and its own outputs to keep."""

    @property
    def record_kind(self) -> str: ...
    @property
    def record_outputs(self) -> tuple[str, ...]: ...


def record(outcome: Outcome[Any], kind: RecordKind) -> dict[str, Any]:
    """The run.json of a job of `kind` that ended with `outcome`."""
    outputs = outcome.as_outputs()
    chief = (outputs.get("worker_pools") or [{}])[0]
    return {
        "record_version": RECORD_VERSION,
        "kind": kind.record_kind,
        "stack": (outputs.get("labels") or {}).get(STACK_LABEL, ""),
        **{k: outputs[k] for k in RUN_OUTPUTS + kind.record_outputs if outputs.get(k) is not None},
        "image": chief.get("image_uri", ""),
        "command": list(chief.get("command") or []),
        "args": [str(arg) for arg in chief.get("args") or []],
    }


def keep(
    outcome: Outcome[Any], warn: Callable[[str], None], kind: RecordKind, output_dir: str | None = None
) -> None:
    """A run ended: write its record to `<output_dir>/run.json` (default: its base_output_dir), the job's own
    output directory and nowhere else; a failure is one warning, never an error."""
    directory = str(outcome.inputs.get("base_output_dir") or "") if output_dir is None else output_dir
    if not directory.strip("/"):
        warn(f"no run.json written: the job has no output directory of its own (got {directory!r})")
        return
    target = join(directory, RUN_FILE)
    try:
        write_text(target, json.dumps(record(outcome, kind), indent=2, sort_keys=True, default=str) + "\n")
    except Exception as exc:  # the record describes the run: losing it never fails the run
        warn(f"could not write {target}: {type(exc).__name__}: {exc}")


def arg_values(args: Sequence[str]) -> dict[str, str]:
    """`--flag value` and `--flag=value` pairs (a flag followed by another flag: "true"), by flag name."""
    values: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = str(args[index])
        index += 1
        if not arg.startswith("--"):
            continue
        name, equals, value = arg[2:].partition("=")
        if not equals:
            following = str(args[index]) if index < len(args) else ""
            if following and not following.startswith("--"):
                value, index = following, index + 1
            else:
                value = "true"
        values[name] = value
    return values
