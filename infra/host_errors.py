"""How a dynamic provider's error reaches the Pulumi CLI: its own paragraph, without a Python traceback."""

from __future__ import annotations

import sys


def plain_errors() -> None:
    """Drop traceback frames from the errors this provider host reports (call from `configure`).

    The host answers a failed call with `traceback.format_exc()` (pulumi/dynamic/__main__.py,
    `_abort_with_traceback`); with no frames that is `<type>: <message>`. Our errors are raised `from None`
    and carry their cause's text, so nothing is lost.
    """
    sys.tracebacklimit = 0
