"""The AIP-160-style filter subset the fakes accept (https://google.aip.dev/160): `field OP value` terms
combined with AND (or juxtaposition), OR, NOT and parentheses. Each fake says which fields and operators it
knows and how a field is read from its messages."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from tests.fakes.grpc_fake import Abort

Matcher = Callable[[Any], bool]
Tokens = list[tuple[str, ...]]
# field, operator, value (unquoted) -> a test of one message; raises Abort for a field the fake does not know.
Comparison = Callable[[str, str, str], Matcher]

OPS: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a is not None and a < b,  # type: ignore[operator]
    "<=": lambda a, b: a is not None and a <= b,  # type: ignore[operator]
    ">": lambda a, b: a is not None and a > b,  # type: ignore[operator]
    ">=": lambda a, b: a is not None and a >= b,  # type: ignore[operator]
}


def token_pattern(field: str, ops: Sequence[str]) -> re.Pattern[str]:
    """Tokens of a filter whose field names match `field` and whose operators are `ops` (longest first)."""
    op = "|".join(re.escape(o) for o in sorted(ops, key=len, reverse=True))
    return re.compile(
        rf"\s*(?:(?P<paren>[()])|(?P<word>AND|OR|NOT)\b|(?P<field>{field})"
        rf'\s*(?P<op>{op})\s*(?P<value>"[^"]*"|[^\s()]+))'
    )


def compare(read: Callable[[Any], object], op: str, value: object) -> Matcher:
    """A test of `read(message) OP value`; ordering operators are false where the field is absent."""
    test = OPS[op]
    return lambda message: test(read(message), value)


def parse_filter(text: str, tokens: re.Pattern[str], comparison: Comparison) -> Matcher:
    found: Tokens = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = tokens.match(text, pos)
        if not m or m.end() == pos:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter near {text[pos:]!r}")
        pos = m.end()
        if m["paren"]:
            found.append(("paren", m["paren"]))
        elif m["word"]:
            found.append(("word", m["word"]))
        else:
            found.append(("cmp", m["field"], m["op"], m["value"].strip('"')))
        while pos < len(text) and text[pos].isspace():
            pos += 1
    matcher, rest = _parse_or(found, comparison)
    if rest:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unexpected {rest[0]} in filter {text!r}")
    return matcher


def _parse_or(tokens: Tokens, comparison: Comparison) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_and(tokens, comparison)
    while tokens and tokens[0] == ("word", "OR"):
        right, tokens = _parse_and(tokens[1:], comparison)
        left = (lambda a, b: lambda m: a(m) or b(m))(left, right)
    return left, tokens


def _parse_and(tokens: Tokens, comparison: Comparison) -> tuple[Matcher, Tokens]:
    left, tokens = _parse_unary(tokens, comparison)
    while tokens and (
        tokens[0] in (("word", "AND"), ("word", "NOT"), ("paren", "(")) or tokens[0][0] == "cmp"
    ):
        if tokens[0] == ("word", "AND"):
            tokens = tokens[1:]
        right, tokens = _parse_unary(tokens, comparison)
        left = (lambda a, b: lambda m: a(m) and b(m))(left, right)
    return left, tokens


def _parse_unary(tokens: Tokens, comparison: Comparison) -> tuple[Matcher, Tokens]:
    if not tokens:
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "Filter ends unexpectedly")
    head = tokens[0]
    if head == ("word", "NOT"):
        inner, rest = _parse_unary(tokens[1:], comparison)
        return (lambda m: not inner(m)), rest
    if head == ("paren", "("):
        inner, rest = _parse_or(tokens[1:], comparison)
        if not rest or rest[0] != ("paren", ")"):
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "Unbalanced parentheses in filter")
        return inner, rest[1:]
    if head[0] != "cmp":
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unexpected {head[1]} in filter")
    _, field, op, value = head
    return comparison(field, op, value), tokens[1:]


# --- the subset of list methods that filter on labels only: labels.k="v" with = and != ---
_LABEL_TOKENS = token_pattern(r"[A-Za-z_][\w.\-]*", ("=", "!="))


def _label_comparison(field: str, op: str, value: str) -> Matcher:
    if field.startswith("labels."):
        key = field.removeprefix("labels.")
        return compare(lambda message: message.labels.get(key), op, value)
    raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")


def labels_filter(text: str) -> Matcher:
    """A test of a message's `labels` map by `labels.k="v"` terms (ListModelVersions, ListEndpoints)."""
    return parse_filter(text, _LABEL_TOKENS, _label_comparison)
