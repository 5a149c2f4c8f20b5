"""Retrying Google API calls that failed for a moment (UNAVAILABLE, DEADLINE_EXCEEDED), with backoff; and
calls refused because their API was enabled moments ago by this `up` (PERMISSION_DENIED "... has not been used
in project ... or it is disabled"), until the API is seen (dynamic/propagation.py: one line per retry,
bounded by the documented propagation worst case)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from google.api_core import exceptions as gexc

from infra.dynamic import propagation

T = TypeVar("T")

TRANSIENT = (gexc.ServiceUnavailable, gexc.DeadlineExceeded)
RETRY_CAP_SECONDS = 30.0
RETRY_ATTEMPTS = 8


def code_name(exc: gexc.GoogleAPICallError) -> str:
    return exc.grpc_status_code.name if exc.grpc_status_code is not None else str(exc.code)


def api_not_yet(exc: Exception) -> str | None:
    """The refusal of an API enabled moments ago (propagation.API_NOT_YET), else None."""
    if isinstance(exc, gexc.PermissionDenied) and propagation.API_NOT_YET.search(exc.message or ""):
        return str(exc.message)
    return None


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def with_retry(
    call: Callable[[], T],
    what: str,
    first_delay: float,
    *,
    error: Callable[[str, gexc.GoogleAPICallError], Exception],
    service: str,
    also: Callable[[gexc.GoogleAPICallError], bool] = lambda _exc: False,
) -> T:
    """`transient_retry`, again while the call's API, enabled moments ago, still refuses it."""
    return propagation.retry_until_seen(
        lambda: transient_retry(call, what, first_delay, error=error, service=service, also=also),
        api_not_yet,
        what,
        "the API enabled by this `up` to accept calls",
        _say,
    )


def transient_retry(
    call: Callable[[], T],
    what: str,
    first_delay: float,
    *,
    error: Callable[[str, gexc.GoogleAPICallError], Exception],
    service: str,
    also: Callable[[gexc.GoogleAPICallError], bool] = lambda _exc: False,
) -> T:
    """Run `call`; retry transient errors (and what `also` accepts) with backoff from `first_delay`.

    A transient error on the last of RETRY_ATTEMPTS raises `error(message, cause)` from None, saying that
    `service` may be degraded; any other error is raised as it came, for the caller to explain.
    """
    delay = first_delay
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return call()
        except gexc.GoogleAPICallError as exc:
            transient = isinstance(exc, TRANSIENT)
            if not transient and not also(exc):
                raise
            if attempt == RETRY_ATTEMPTS:
                if transient:
                    raise error(
                        f"{what} failed {attempt} times with a transient error ({code_name(exc)}): "
                        f"{exc.message}. {service} may be degraded; run `pulumi up` again later.",
                        exc,
                    ) from None
                raise
            print(f"{what}: {code_name(exc)}, retrying in {delay:g}s", file=sys.stderr, flush=True)
            time.sleep(delay)
            delay = min(delay * 2, RETRY_CAP_SECONDS)
    raise AssertionError("unreachable")
