"""Which slice of a conversion this process makes: its replica number and the replica count.

Read from Vertex's CLUSTER_SPEC (pools `workerpool0`, the chief, then `workerpool1`, the workers), or else
from TF_CONFIG (`chief`, then `worker`); neither means one replica. Other pools (reduction servers,
evaluators) are not data replicas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from trainer.errors import TrainerError

CLUSTER_SPEC_POOLS = ("workerpool0", "workerpool1")
TF_CONFIG_ROLES = ("chief", "worker")


@dataclass(frozen=True)
class Replica:
    index: int  # 0 is the chief: it waits for the others and writes metadata.json
    count: int

    @property
    def is_chief(self) -> bool:
        return self.index == 0

    def __str__(self) -> str:
        return f"replica {self.index + 1}/{self.count}"


def from_env(environ: Mapping[str, str]) -> Replica:
    for variable, roles in (("CLUSTER_SPEC", CLUSTER_SPEC_POOLS), ("TF_CONFIG", TF_CONFIG_ROLES)):
        if environ.get(variable):
            return from_config(variable, environ[variable], roles)
    return Replica(0, 1)


def from_config(variable: str, text: str, roles: tuple[str, str]) -> Replica:
    """Replicas numbered across `roles` in order: the chief role's first, then the workers'."""
    try:
        config = json.loads(text)
        cluster, task = config.get("cluster") or {}, config.get("task") or {}
        sizes = [len(cluster.get(role) or []) for role in roles]
        role, index = task.get("type", roles[0]), int(task.get("index", 0))
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
        raise TrainerError(
            f"{variable} is not a cluster description ({exc}); unset it or fix the launcher"
        ) from exc
    if role not in roles or not 0 <= index < sizes[roles.index(role)]:
        raise TrainerError(
            f"{variable}: task {role} {index} is not a data replica (data replicas are {' and '.join(roles)} "
            "tasks); run the data job with a chief pool and, optionally, one pool of workers"
        )
    return Replica(sum(sizes[: roles.index(role)]) + index, sum(sizes))
