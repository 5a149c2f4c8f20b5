"""The labels every labelable resource and every job of this stack carries."""

from __future__ import annotations


def stack_labels(pulumi_project: str, pulumi_stack: str) -> dict[str, str]:
    """Labels that let billing reports and the kill switch find this stack's resources.

    Keys use only lowercase letters, digits and underscores: the kill switch names them in list filters.
    """
    return {"managed-by": "pulumi", "pulumi_project": pulumi_project, "pulumi_stack": pulumi_stack}
