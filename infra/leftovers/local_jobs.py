"""The live local jobs of a `runner: local` stack: the LocalRunner's records under the stack's localDir.

Each local job keeps its record in `<base_output_dir>/.vertex-training-local/<id>/` (job.json with its labels,
status.json, supervisor.pid: infra/vertex/runners/local/runner.py); every job of a local stack writes under
its localDir (data/, runs/, tuning/ and each trial's directory). The LocalRunner reads a record's state as the
provider does (a supervisor that is gone without a final state is FAILED), and cancels it the same way.
A killed `pulumi up` can leave one running: it costs nothing but this machine's CPU, so it is listed as free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from infra import commands
from infra.dynamic import polling
from infra.leftovers.items import Found, Item
from infra.vertex.lifecycle.status import LIVE_STATES, JobStatus
from infra.vertex.runners.local.runner import LOCAL_PREFIX, LOCAL_RECORDS, LocalRunner

CANCEL_WAIT_SECONDS = 60.0  # the supervisor gives replicas 10 s after SIGTERM, then kills them
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class LocalJob:
    base: Path  # the job's base output dir
    status: JobStatus

    @property
    def record_dir(self) -> Path:
        return self.base / LOCAL_RECORDS / self.status.name.removeprefix(LOCAL_PREFIX)


def _records(local_dir: Path) -> Iterator[tuple[Path, str]]:
    """(base output dir, job name) of every local job record under `local_dir`."""
    for records in sorted(local_dir.rglob(LOCAL_RECORDS)):
        for job in sorted(records.iterdir()):
            if (job / "job.json").is_file():
                yield records.parent, LOCAL_PREFIX + job.name


def live(local_dir: str, pulumi_project: str, pulumi_stack: str) -> tuple[list[LocalJob], list[str]]:
    """The stack's local jobs not yet terminal, oldest first, and the records that could not be read (a
    `job.json` cut short by a killed process, a folder without permission), each named."""
    root = Path(local_dir)
    if not root.is_dir():
        return [], []
    found, unread = [], []
    try:
        records = list(_records(root))
    except OSError as exc:
        return [], [f"local jobs under {root} ({type(exc).__name__}: {exc})"]
    for base, name in records:
        try:
            status = LocalRunner(str(base)).get(name)
        except (OSError, ValueError) as exc:  # ValueError: JSONDecodeError of a half-written record
            where = base / LOCAL_RECORDS / name.removeprefix(LOCAL_PREFIX)
            unread.append(f"local job record {where} ({type(exc).__name__}: {str(exc).splitlines()[0]})")
            continue
        labels = status.labels if status else {}
        if (
            status is not None
            and status.state in LIVE_STATES
            and labels.get("pulumi_project") == pulumi_project
            and labels.get("pulumi_stack") == pulumi_stack
        ):
            found.append(LocalJob(base, status))
    return sorted(found, key=lambda job: job.status.create_time), unread


def _pid(job: LocalJob) -> str:
    try:
        return (job.record_dir / "supervisor.pid").read_text().strip()
    except OSError:
        return "?"


def item(job: LocalJob, stack: str, local_dir: str) -> Item:
    """One live local job, named with its output folder under localDir."""
    try:
        where = str(job.base.relative_to(Path(local_dir).absolute()))
    except ValueError:
        where = str(job.base)
    return Item(
        kind="local job",
        name=f"{job.status.name} ({where})",
        region="local",
        state=job.status.state.removeprefix("JOB_STATE_"),
        bills=False,
        cost=f"free (this machine's CPU; supervisor pid {_pid(job)})",
        remove=commands.python_m("infra.leftovers", "--stack", stack, "--cancel"),
        live_job=True,
    )


def find(local_dir: str, pulumi_project: str, pulumi_stack: str) -> tuple[Found, list[LocalJob]]:
    jobs, unread = live(local_dir, pulumi_project, pulumi_stack)
    return Found(items=[item(job, pulumi_stack, local_dir) for job in jobs], cannot_tell=unread), jobs


def cancel(
    jobs: list[LocalJob],
    wait_seconds: float = CANCEL_WAIT_SECONDS,
    say: Callable[[str], None] = print,
) -> dict[str, str]:
    """Cancel each local job as the provider's delete does, then wait until each stopped; name -> state."""
    for job in jobs:
        LocalRunner(str(job.base)).cancel(job.status.name)
        say(f"cancelled: local job {job.status.name}")
    say(f"waiting up to {wait_seconds:.0f} s for {len(jobs)} local job(s) to stop")

    def read(_states: dict[str, str]) -> dict[str, str]:
        now = {}
        for job in jobs:
            status = LocalRunner(str(job.base)).get(job.status.name)
            now[job.status.name] = status.state if status else ""
        return now

    def stopped(states: dict[str, str]) -> bool:
        return all(state not in LIVE_STATES for state in states.values())

    return polling.poll_until(read({}), read, stopped, time.time() + wait_seconds, POLL_SECONDS)
