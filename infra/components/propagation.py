"""Waits for eventually consistent Google Cloud changes (IAM grants, new APIs) before their first use.

A Sleep waits only when it is created, so only a stack's first `pulumi up` pays for it; later runs do not.
"""

from __future__ import annotations

import pulumi
import pulumiverse_time as time

from infra.components.options import children

# "Changes to allow or deny policies typically propagate in 2 minutes, but could potentially take 7 minutes
# or longer" (https://cloud.google.com/iam/docs/access-change-propagation). Two minutes covers the typical
# case; a slower project fails with the service's own "may take a few minutes" message and a re-run passes.
IAM_PROPAGATION = "120s"
# Enabling an API returns before every Google frontend accepts calls for it (the Eventarc, Budgets and Vertex
# errors of hashicorp/terraform-provider-google#14584 and #25294); a minute lets it settle.
API_PROPAGATION = "60s"


def wait(
    name: str,
    duration: str,
    after: list[pulumi.Resource],
    parent: pulumi.ComponentResource,
    opts: pulumi.ResourceOptions | None = None,
) -> time.Sleep:
    """A Sleep created only once everything in `after` (and what the parent's `opts` wait for) exists."""
    return time.Sleep(name, create_duration=duration, opts=children(parent, opts, depends_on=after))
