"""ResourceOptions for a component's children: parented, and waiting for what the component waits for."""

from __future__ import annotations

import pulumi


def children(
    parent: pulumi.ComponentResource, opts: pulumi.ResourceOptions | None, **extra
) -> pulumi.ResourceOptions:
    """Children do not inherit their component's depends_on (e.g. the enabled APIs), so hand it down."""
    inherited = opts.depends_on if opts and opts.depends_on else []
    inherited = list(inherited) if isinstance(inherited, list | tuple) else [inherited]
    own = extra.pop("depends_on", [])
    return pulumi.ResourceOptions(parent=parent, depends_on=[*inherited, *own], **extra)
