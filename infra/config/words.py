"""A number a user wrote in words (`an hour`, `90 min`, `$25`, `ten`), as the key's unit takes it: the
example in a fix is then the user's own value, converted."""

from __future__ import annotations

import re

_SMALL = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100, "half an": 0.5, "half a": 0.5,
}  # fmt: skip
_SECONDS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400, "week": 604800, "weeks": 604800,
}  # fmt: skip
_MONEY = re.compile(r"^\s*(?:usd|us\$|\$)?\s*([0-9]+(?:\.[0-9]+)?)\s*(?:usd|\$|dollars?)?\s*$", re.IGNORECASE)
_AMOUNT = re.compile(r"^\s*(half an?|[a-z]+|[0-9]+(?:\.[0-9]+)?)\s*([a-z]+)?\s*$", re.IGNORECASE)


def _count(word: str) -> float | None:
    word = word.lower()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", word):
        return float(word)
    return _SMALL.get(word)


def converted(key: str, value: object) -> str | None:
    """`value` (a string that is not a plain number) in the unit `key` takes (seconds for *Seconds keys,
    minutes for *Minutes keys, else a plain number or an amount of money), as printed; None when it is not
    a number in words."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    unit = 1 if key.endswith("Seconds") else 60 if key.endswith("Minutes") else None
    if unit is None:
        money = _MONEY.match(text)
        found = float(money.group(1)) if money else _count(text)
    else:
        amount = _AMOUNT.match(text)
        if not amount:
            return None
        count, word = _count(amount.group(1)), amount.group(2)
        if count is None and word is None and amount.group(1) in _SECONDS:  # "hour"
            count, word = 1, amount.group(1)
        per = _SECONDS.get(word) if word else unit
        found = None if count is None or per is None else count * per / unit
    if found is None or found <= 0:
        return None
    return str(int(found)) if float(found).is_integer() else str(found)
