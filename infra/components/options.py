"""ResourceOptions for a component's children: parented, and waiting for what the component waits for."""

from __future__ import annotations

import pulumi


def children(
    parent: pulumi.ComponentResource, opts: pulumi.ResourceOptions | None, **extra
) -> pulumi.ResourceOptions:
    """Children do not inherit their component's depends_on (e.g. the enabled APIs) nor its hooks (the
    retry of an API's first use: components/propagation.py): hand both down; `hooks` adds the child's own."""
    given = opts.depends_on if opts and opts.depends_on else []
    if isinstance(given, pulumi.Resource):
        inherited = [given]
    elif isinstance(given, list | tuple):
        inherited = list(given)
    else:
        # An Output (or awaitable) of a list cannot be handed down before it resolves.
        raise TypeError(f"depends_on of {parent!r}'s options: a resource or a list of them, not {given!r}")
    own = extra.pop("depends_on", [])
    hooks = pulumi.ResourceHookBinding.merge(opts.hooks if opts else None, extra.pop("hooks", None))
    has_hooks = any(getattr(hooks, kind) for kind in ("on_error", "before_create", "after_create"))
    return pulumi.ResourceOptions(
        parent=parent, depends_on=[*inherited, *own], hooks=hooks if has_hooks else None, **extra
    )
