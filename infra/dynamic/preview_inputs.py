"""What a dynamic provider's check/diff see of a preview: unknown values, and which inputs changed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN


def is_unknown(value: Any) -> bool:
    """True when a preview left this value (or anything inside it) unknown.

    The dynamic-provider host hands Check/Diff `pulumi.output.Unknown` objects (it deserializes with
    keep_unknowns=True); other paths, and older hosts, give the sentinel string.
    """
    if isinstance(value, Unknown):
        return True
    if isinstance(value, str):
        return value == UNKNOWN
    if isinstance(value, Mapping):
        return any(is_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(is_unknown(v) for v in value)
    return False


def unknown_list(props: Mapping[str, Any], key: str) -> bool:
    """A list input that a preview left unknown as a whole (not a list with unknown items)."""
    return key in props and is_unknown(props[key]) and not isinstance(props[key], list)


def changed_inputs(olds: Mapping[str, Any], news: Mapping[str, Any], inputs: Iterable[str]) -> list[str]:
    """The inputs whose new value differs from the old one, or is not known yet (it may differ)."""
    return [k for k in inputs if is_unknown(news.get(k)) or olds.get(k) != news.get(k)]
