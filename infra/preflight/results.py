"""One checked item's outcome, and how the outcomes print (text lines or one JSON object) and exit."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

OK = "ok"
MISSING = "missing"
CANNOT_TELL = "cannot tell"
# Advice that does not stop `up` (it would go ahead): printed, but not counted against being ready.
NOTE = "note"
STATUSES = (OK, MISSING, CANNOT_TELL, NOTE)
_WIDTH = max(len(status) for status in STATUSES) + 2


@dataclass(frozen=True)
class Result:
    """`item` (what was checked), its status, what was found, and the command or link that fixes it."""

    item: str
    status: str
    detail: str
    fix: str = ""


def ok(item: str, detail: str) -> Result:
    return Result(item, OK, detail)


def missing(item: str, detail: str, fix: str) -> Result:
    return Result(item, MISSING, detail, fix)


def cannot_tell(item: str, detail: str, fix: str = "") -> Result:
    return Result(item, CANNOT_TELL, detail, fix)


def note(item: str, detail: str, fix: str = "") -> Result:
    return Result(item, NOTE, detail, fix)


def ready(results: list[Result]) -> bool:
    """Everything needed is known to be there: no item missing and none that could not be told (notes
    are advice only)."""
    return all(result.status in (OK, NOTE) for result in results)


def exit_code(results: list[Result]) -> int:
    return 0 if ready(results) else 1


def text(stack: str, project: str, results: list[Result]) -> str:
    """One line per item (status, item: detail), its fix indented on the next line, and a verdict."""
    lines = [f"Preflight of stack {stack} (project {project}), read-only:"]
    for result in results:
        lines.append(f"{result.status:<{_WIDTH}}{result.item}: {result.detail}")
        if result.fix:
            lines.append(f"{'':<{_WIDTH}}fix: {result.fix}")
    counts = {status: sum(r.status == status for r in results) for status in STATUSES}
    summary = ", ".join(f"{count} {status}" for status, count in counts.items() if status != NOTE or count)
    notes = " (read the notes above)" if counts[NOTE] else ""
    verdict = (
        f"ready for `pulumi up`{notes}"
        if ready(results)
        else "not ready: fix the lines above, then run it again"
    )
    lines.append(f"{summary}: {verdict}")
    return "\n".join(lines)


def as_json(stack: str, project: str, results: list[Result]) -> str:
    """The same as one object: stack, project, ready, and the checks in order."""
    return json.dumps(
        {"stack": stack, "project": project, "ready": ready(results), "checks": [asdict(r) for r in results]},
        indent=2,
    )
