"""Google's predefined roles, as far as the rules need them: a pinned subset of the public iam-dataset."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("google_roles.json")


@dataclass(frozen=True)
class GoogleRoles:
    roles: dict[str, frozenset[str]]  # role -> its permissions that match rules.RELEVANT
    permissions: dict[str, str | None]  # permission the code names -> a predefined role holding it
    source: dict[str, str]

    def exists(self, role: str) -> bool:
        return role in self.roles

    def relevant(self, role: str) -> frozenset[str]:
        return self.roles.get(role, frozenset())

    def is_real(self, permission: str) -> bool:
        return self.permissions.get(permission) is not None


@cache
def load(path: Path = DATA) -> GoogleRoles:
    raw = json.loads(path.read_text())
    return GoogleRoles(
        roles={name: frozenset(r["relevant_permissions"]) for name, r in raw["roles"].items()},
        permissions=dict(raw["permissions"]),
        source=raw["_source"],
    )
