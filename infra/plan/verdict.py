"""What `pulumi up` would refuse of a stack, in the words `make plan` and `make preflight` both print: the
stack's program run offline (plan/program.py), each job's inputs through its provider's own check."""

from __future__ import annotations

from pathlib import Path

from infra.config import REPO_ROOT, StackConfig
from infra.plan.jobs import PlannedJob, planned_jobs
from infra.plan.program import Declared, declared, project_name

# The words both commands put before each refusal.
REFUSES = "`pulumi up` would refuse"


def program(cfg: StackConfig, root: Path = REPO_ROOT) -> tuple[list[Declared], list[PlannedJob]]:
    """(every resource the program declares, the jobs among them in the order they run); prices as the
    process reads them (the plan reads the cited table only: Catalog.offline())."""
    from infra.stack import build

    resources = declared(lambda: build(cfg), project_name(root), cfg.stack)
    return resources, planned_jobs(resources)


def refusals(jobs: list[PlannedJob]) -> list[tuple[str, str, str]]:
    """(job, input, reason) of each input a job's provider check would refuse."""
    return [(job.name, prop, reason) for job in jobs for prop, reason in job.failures]


def refusal_line(job: str, prop: str, reason: str) -> str:
    return f"{REFUSES} the {job} job: {prop}: {reason}"
