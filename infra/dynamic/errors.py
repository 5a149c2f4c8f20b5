"""How a dynamic provider's error reaches the Pulumi CLI: its own paragraph, without a Python traceback."""

from __future__ import annotations

import sys

from google.api_core import exceptions as gexc


class ProviderError(Exception):
    """An error for the user, raised `from None`; `api_error` keeps the Google API error it explains.

    The dynamic-provider host prints the whole exception chain, so the cause's text goes into the message and
    callers that need the cause itself read it here.
    """

    def __init__(self, message: str, api_error: gexc.GoogleAPICallError | None = None):
        super().__init__(message)
        self.api_error = api_error


def plain_errors() -> None:
    """Drop traceback frames from the errors this provider host reports (call from `configure`).

    The host answers a failed call with `traceback.format_exc()` (pulumi/dynamic/__main__.py,
    `_abort_with_traceback`); with no frames that is `<type>: <message>`. Our errors are raised `from None`
    and carry their cause's text, so nothing is lost.
    """
    sys.tracebacklimit = 0
