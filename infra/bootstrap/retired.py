"""A custom role earlier bootstraps made and this one no longer does: deleted on the next `up`, in one run.

RESOURCE_TYPE is the marker's type; the engine finds the role's state under its old type through the alias.

The role was created `protect`ed. Removing it from the program would stop `up` ("unable to delete resource
... as it is currently marked for protection"), and unprotecting takes one `up` before another can delete it.
Instead its Pulumi name is taken by a marker of another type that aliases it (`RetiredCustomRole`): the
marker's diff asks to replace the role's state, and the engine replaces it in the same run, creating the
marker (nothing in Google Cloud) and deleting the old role through its own provider (IAM roles.delete).
What the engine does, read from pulumi/pulumi (pkg/resource/deploy/step_generator.go and step.go at the
3.27x line; read 2026-11-26): a replacement is refused only when the old and the new resource are both
protected ("we do allow unprotecting and replacing to happen in a single update cycle"); the delete of a
replaced resource skips the protect check (`!s.replacing && s.old.Protect`); a change of provider is a
replacement only when the new provider's DiffConfig says so, and the dynamic provider host does not
implement DiffConfig (answered as "no replacement"), so the marker's own diff decides.

On a bootstrap that never had the role, the marker is simply created. IAM keeps a deleted custom role for 7
days (it can be undeleted) and purges it after that; its id stays unusable until then
(https://cloud.google.com/iam/docs/creating-custom-roles#deleting-custom-role).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi.dynamic
from pulumi.dynamic import CheckResult, CreateResult, DiffResult, ResourceProvider

# The resource type of the role's state that the marker takes over (pulumi-gcp's IAMCustomRole).
CUSTOM_ROLE_TYPE = "gcp:projects/iAMCustomRole:IAMCustomRole"
RESOURCE_TYPE = "pulumi-python:dynamic/bootstrap:RetiredCustomRole"
MARKER = "retired_role"  # the role's full name; a state without it is the role's own


class RetiredRoleProvider(ResourceProvider):
    """Replaces the aliased role's state once; creates and deletes nothing in Google Cloud itself."""

    # Holds no secret (a class reference): see infra/dynamic/base.py, SpecProvider.
    serialize_as_secret_always = False

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        return CheckResult(news, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # The role's own state (reached through the alias) holds no marker: replace it, which deletes the
        # role. A marker already in state is unchanged. An explicit answer: never the engine's own diff.
        if olds.get(MARKER) != news.get(MARKER):
            return DiffResult(changes=True, replaces=[MARKER], delete_before_replace=False)
        return DiffResult(changes=False, replaces=[])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props[MARKER]), outs=dict(props))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to do: the role went when its state was replaced (or never existed here)."""


class RetiredCustomRole(pulumi.dynamic.Resource, module="bootstrap", name="RetiredCustomRole"):
    """Takes over the Pulumi name of a custom role the bootstrap no longer creates, so `up` deletes it."""

    def __init__(self, resource_name: str, project: str, role_id: str) -> None:
        super().__init__(
            RetiredRoleProvider(),
            resource_name,
            {MARKER: f"projects/{project}/roles/{role_id}", "project": project, "role_id": role_id},
            options(),
        )


def options() -> pulumi.ResourceOptions:
    """The role's own name and parent, under the role's type; never protected (the replacement deletes)."""
    return pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=CUSTOM_ROLE_TYPE)], protect=False)
