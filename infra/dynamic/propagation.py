"""Waiting for eventually consistent Google Cloud changes by retrying their first use, never by a fixed sleep.

A new IAM grant, or an API just enabled, is not seen everywhere at once: Google says changes "typically
propagate in 2 minutes, but could potentially take 7 minutes or longer"
(https://cloud.google.com/iam/docs/access-change-propagation, read 2026-11-27), and an API's first calls
may be refused for a while after it is enabled (hashicorp/terraform-provider-google#14584, #25294). So the
first use of such a change is tried at once and, when it is refused the way a change not yet seen is
refused, tried again on DELAYS, one line per retry saying what is waited for, until the documented 7
minutes have passed; then the refusal stands (a permission really missing, say). Used by the dynamic
providers (a fresh builder's grants: cloudbuild/provider.py) and by the program's error hooks
(infra/components/propagation.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

PROPAGATION_URL = "https://cloud.google.com/iam/docs/access-change-propagation"
TYPICAL_SECONDS = 120  # "typically propagate in 2 minutes"
WORST_CASE_SECONDS = 420  # "could potentially take 7 minutes or longer": the documented bound we wait for
# The gaps before each retry: short first (most changes land within the typical 2 minutes), then a minute,
# adding up to the documented worst case, WORST_CASE_SECONDS.
DELAYS: tuple[float, ...] = (10, 20, 30, 60, 60, 60, 60, 60, 60)
assert sum(DELAYS) == WORST_CASE_SECONDS

# How Google refuses a call its caller's (or a service identity's) new grant does not cover yet.
PERMISSION_NOT_YET = re.compile(
    r"permission[ _]denied|\b403\b|does not have [\w.]+ (?:access|permission)|not authori[sz]ed|"
    r"may take a few minutes|forbidden",
    re.IGNORECASE,
)
# How Google refuses a call to an API enabled moments ago (SERVICE_DISABLED, "accessNotConfigured").
API_NOT_YET = re.compile(
    r"has not been used in project|it is disabled|service_disabled|accessnotconfigured|"
    r"api (?:is )?not enabled|enable it by visiting",
    re.IGNORECASE,
)


def delay(retry: int) -> float | None:
    """The gap before retry number `retry` (1: the first), None once the worst case has been waited."""
    return DELAYS[retry - 1] if 1 <= retry <= len(DELAYS) else None


def waited(retries: int) -> float:
    """Seconds waited before retry number `retries + 1` (the gaps of the retries made so far)."""
    return float(sum(DELAYS[:retries]))


def retry_line(what: str, waiting_for: str, retry: int, gap: float, reason: str) -> str:
    """`<what> was refused (<reason>): waiting for <waiting_for>; retry 2 in 20s (10s of at most 420s
    waited; IAM: typically 120s)`."""
    first = reason.strip().splitlines()[0] if reason.strip() else "refused"
    return (
        f"{what} was refused ({first[:200]}): waiting for {waiting_for}; retry {retry} in {gap:.0f}s "
        f"({waited(retry - 1):.0f}s of at most {WORST_CASE_SECONDS}s waited; changes typically apply within "
        f"{TYPICAL_SECONDS}s, {PROPAGATION_URL})"
    )


def retry_until_seen(
    call: Callable[[], T],
    not_yet: Callable[[Exception], str | None],
    what: str,
    waiting_for: str,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call`; while it fails with an error `not_yet` explains (it returns the reason to print), wait
    the next of DELAYS and run it again; past the worst case, or for any other error, raise it."""
    retry = 0
    while True:
        try:
            return call()
        except Exception as exc:
            reason = not_yet(exc)
            gap = delay(retry + 1) if reason is not None else None
            if reason is None or gap is None:
                raise
            retry += 1
            say(retry_line(what, waiting_for, retry, gap, reason))
            sleep(gap)
