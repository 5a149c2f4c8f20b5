"""Suggestions for a misspelt name ("did you mean"): by case, separators, similarity (difflib), or alias."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

# difflib's own default: a ratio of 0.6 keeps `epoch` -> `epochs` and drops unrelated names.
CUTOFF = 0.6


def _plain(name: str) -> str:
    """`learning_rate`, `learning-rate` and `LearningRate` compare as the same name."""
    return name.replace("_", "").replace("-", "").lower()


def spelt_alike(name: str, known: Iterable[str]) -> str | None:
    """The known name that differs from `name` only in case or separators, or None."""
    return {_plain(k): k for k in known}.get(_plain(name))


def closest(name: str, known: Iterable[str], aliases: Mapping[str, str] | None = None) -> str | None:
    """The known name `name` most likely meant, or None when nothing is close enough."""
    known = list(known)
    by_plain = {_plain(k): k for k in known}
    plain = _plain(name)
    if same := spelt_alike(name, known):
        return same
    alias = {_plain(k): v for k, v in (aliases or {}).items()}.get(plain)
    if alias in known:
        return alias
    match = difflib.get_close_matches(plain, list(by_plain), n=1, cutoff=CUTOFF)
    return by_plain[match[0]] if match else None
