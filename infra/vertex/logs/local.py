"""A local job's log lines: the replicas' log files (runners/local/supervisor.py writes them), tailed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from infra.vertex.logs.cloud import prefixed, replica_name


@dataclass
class LocalJobLog:
    """Byte offsets into each replica's log file; a line is printed once it is complete (or the job ended)."""

    directory: Path
    offsets: dict[str, int] = field(default_factory=dict)

    def read(self, final: bool = False) -> list[str]:
        lines: list[str] = []
        for path in sorted(self.directory.glob("workerpool*-*.log")):
            task = path.stem
            offset = self.offsets.get(task, 0)
            try:
                with open(path, "rb") as log:
                    log.seek(offset)
                    chunk = log.read()
            except FileNotFoundError:
                continue
            complete = chunk if final else chunk[: chunk.rfind(b"\n") + 1]
            if not complete:
                continue
            self.offsets[task] = offset + len(complete)
            lines += prefixed(replica_name(task), complete.decode(errors="replace"))
        return lines
