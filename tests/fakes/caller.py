"""The one caller the fakes of Google's IAM-checked services answer: which permissions it holds on which
resource (`projects/<id>`, `billingAccounts/<id>`, `projects/<id>/serviceAccounts/<email>`), shared by those
fakes as one IAM policy view would be. A resource's answer includes what its parents grant (`inherits_from`:
an account's project), as IAM's policy inheritance does."""

from __future__ import annotations

from collections.abc import Iterable


class Caller:
    def __init__(self) -> None:
        self._held: dict[str, set[str]] = {}

    def grant(self, resource: str, permissions: Iterable[str]) -> None:
        self._held.setdefault(resource, set()).update(permissions)

    def revoke(self, resource: str, *permissions: str) -> None:
        self._held.get(resource, set()).difference_update(permissions)

    def _on(self, resource: str, inherits_from: Iterable[str]) -> set[str]:
        return set().union(*(self._held.get(r, set()) for r in (resource, *inherits_from)))

    def holds(self, resource: str, permission: str, inherits_from: Iterable[str] = ()) -> bool:
        return permission in self._on(resource, inherits_from)

    def subset(
        self, resource: str, permissions: Iterable[str], inherits_from: Iterable[str] = ()
    ) -> list[str]:
        """What testIamPermissions answers: the requested permissions the caller holds, in request order."""
        held = self._on(resource, inherits_from)
        return [permission for permission in permissions if permission in held]
