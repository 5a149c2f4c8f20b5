"""What `pulumi up` would refuse of a stack, in the words `make plan` and `make preflight` both print: the
stack's program run offline (plan/program.py), each job's and each deployment's inputs through its provider's
own check."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from infra.config import REPO_ROOT, StackConfig
from infra.plan.jobs import PlannedJob, planned_jobs
from infra.plan.program import Declared, declared, project_name
from infra.plan.serving import PlannedServing, planned_deployments

# The words both commands put before each refusal.
REFUSES = "`pulumi up` would refuse"


class Checked(Protocol):
    """A planned job or deployment: its resource name and what its provider's check refuses."""

    @property
    def name(self) -> str: ...

    @property
    def failures(self) -> tuple[tuple[str, str], ...]: ...


@dataclass(frozen=True)
class Programmed:
    resources: list[Declared]
    jobs: list[PlannedJob]  # in the order they run
    serving: list[PlannedServing]


def program(cfg: StackConfig, root: Path = REPO_ROOT) -> Programmed:
    """Every resource the program declares, its jobs and its deployments; prices as the process reads them
    (the plan reads the cited table only: Catalog.offline())."""
    from infra.stack import build

    resources = declared(lambda: build(cfg), project_name(root), cfg.stack)
    return Programmed(resources, planned_jobs(resources), planned_deployments(resources))


def refusals(checked: Iterable[Checked]) -> list[tuple[str, str, str]]:
    """(resource, input, reason) of each input a job's or a deployment's provider check would refuse."""
    return [(item.name, prop, reason) for item in checked for prop, reason in item.failures]


def refusal_line(name: str, prop: str, reason: str) -> str:
    return f"{REFUSES} {name}: {prop}: {reason}"
