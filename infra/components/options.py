"""ResourceOptions for a component's children: parented, and waiting for what the component waits for."""

from __future__ import annotations

import pulumi


def children(
    parent: pulumi.ComponentResource, opts: pulumi.ResourceOptions | None, **extra
) -> pulumi.ResourceOptions:
    """Children do not inherit their component's depends_on (e.g. the enabled APIs) nor its hooks (the
    retry of an API's first use: components/propagation.py): hand both down; `hooks` adds the child's own."""
    inherited = opts.depends_on if opts and opts.depends_on else []
    inherited = list(inherited) if isinstance(inherited, list | tuple) else [inherited]
    own = extra.pop("depends_on", [])
    hooks = pulumi.ResourceHookBinding.merge(opts.hooks if opts else None, extra.pop("hooks", None))
    has_hooks = any(getattr(hooks, kind) for kind in ("on_error", "before_create", "after_create"))
    return pulumi.ResourceOptions(
        parent=parent, depends_on=[*inherited, *own], hooks=hooks if has_hooks else None, **extra
    )
