"""The one caller the fakes of Google's IAM-checked services answer: which permissions it holds on which
resource (`projects/<id>`, `billingAccounts/<id>`), shared by those fakes as one IAM policy view would be."""

from __future__ import annotations

from collections.abc import Iterable


class Caller:
    def __init__(self) -> None:
        self._held: dict[str, set[str]] = {}

    def grant(self, resource: str, permissions: Iterable[str]) -> None:
        self._held.setdefault(resource, set()).update(permissions)

    def revoke(self, resource: str, *permissions: str) -> None:
        self._held.get(resource, set()).difference_update(permissions)

    def holds(self, resource: str, permission: str) -> bool:
        return permission in self._held.get(resource, set())

    def subset(self, resource: str, permissions: Iterable[str]) -> list[str]:
        """What testIamPermissions answers: the requested permissions the caller holds, in request order."""
        held = self._held.get(resource, set())
        return [permission for permission in permissions if permission in held]
