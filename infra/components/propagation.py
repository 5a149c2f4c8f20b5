"""Error hooks that retry the first use of an eventually consistent change (an API just enabled, a new IAM
grant) instead of sleeping a fixed time before it.

Pulumi's error hook (pulumi/pulumi#21291; `ErrorHook` in pulumi/resource_hooks.py, SDK 3.272) runs in this
program when a resource's create or update fails, with every error so far (newest first); returning True
makes the engine try the operation again. The hook waits the next gap of infra/dynamic/propagation.DELAYS
(one line per retry saying what it waits for) and asks for a retry only while the newest error reads as
a change not yet seen and the documented worst case (7 minutes) has not been waited; any other failure,
and the same one past the bound, fails as before. Nothing waits when nothing fails: a project whose
changes land at once pays no time (the Sleeps of earlier versions waited 60 s after the APIs and 120 s
after each set of grants on every first `up`). Error hooks need a Pulumi CLI that supports them (3.219 or
later, pulumi/pulumi#21291; DataDog/datadog-agent#54683 names the version).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence

import pulumi
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import monitor_supports_feature

from infra.dynamic import propagation

# Operations a retry may repeat: a failed create or update. A failed delete is left to the user.
RETRIED_OPERATIONS = frozenset({"create", "update"})
# The project's dynamic resources (a training job, an image build): their providers retry what they call.
DYNAMIC_TYPES = "pulumi-python:dynamic"


def decide(
    operation: str, errors: Sequence[str], patterns: Sequence[re.Pattern[str]]
) -> tuple[float, str] | None:
    """(gap before the retry, the refusal) when the newest error is a change not yet seen and the worst case
    is not yet waited; None: let the failure stand."""
    if operation not in RETRIED_OPERATIONS or not errors:
        return None
    newest = errors[0]
    if not any(pattern.search(newest) for pattern in patterns):
        return None
    gap = propagation.delay(len(errors))
    return None if gap is None else (gap, newest)


def on_error_function(
    waiting_for: str, patterns: Sequence[re.Pattern[str]]
) -> Callable[[pulumi.ErrorHookArgs], Awaitable[bool]]:
    """The hook's function: one line and the next gap, then True, while `decide` says to retry."""

    async def on_error(args: pulumi.ErrorHookArgs) -> bool:
        if args.type.startswith(DYNAMIC_TYPES):
            return False  # a dynamic provider retries its own calls (dynamic/propagation.py)
        found = decide(args.failed_operation, args.errors, patterns)
        if found is None:
            return False
        gap, refusal = found
        what = f"{args.failed_operation} of {args.type} {args.name}"
        pulumi.log.info(propagation.retry_line(what, waiting_for, len(args.errors), gap, refusal))
        await asyncio.sleep(gap)
        return True

    return on_error


def retry_hook(name: str, waiting_for: str, patterns: Sequence[re.Pattern[str]]) -> pulumi.ErrorHook:
    """An ErrorHook named `name` that retries while `patterns` match the newest error (see `decide`)."""
    return pulumi.ErrorHook(name, on_error_function(waiting_for, patterns))


def supported() -> bool:
    """Whether the Pulumi CLI running the program takes error hooks (registering one with an older CLI fails
    the whole program: pulumi/runtime/resource.py, register_error_hook)."""
    return monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_ERROR_HOOKS)


def _binding(hook: Callable[[], pulumi.ErrorHook]) -> pulumi.ResourceHookBinding | None:
    if supported():
        return pulumi.ResourceHookBinding(on_error=[hook()])
    pulumi.log.warn(
        "this Pulumi CLI takes no error hooks (3.219 or later does): a first use that a change still "
        "propagating refuses fails instead of being retried; run `pulumi up` again if it does, or update "
        "the CLI"
    )
    return None


def api_hooks() -> pulumi.ResourceHookBinding | None:
    """For every resource after the APIs are enabled: retry while an API just enabled is still refused."""
    return _binding(
        lambda: retry_hook("api-enablement", "the APIs enabled by this `up`", [propagation.API_NOT_YET])
    )


def grant_hooks(name: str, grants: str) -> pulumi.ResourceHookBinding | None:
    """For the first user of new grants (`grants` says which): retry while they, or the APIs, are refused."""
    patterns = [propagation.PERMISSION_NOT_YET, propagation.API_NOT_YET]
    return _binding(lambda: retry_hook(name, grants, patterns))
