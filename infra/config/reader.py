"""How stack values are read (typed YAML or strings from the Pulumi runtime); errors name the key."""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

NAMESPACE = "vertex-training"


class ConfigError(ValueError):
    """A stack configuration value is missing or invalid; the message names the key and the fix."""

    def __init__(self, key: str | tuple[str, ...], problem: str, fix: str) -> None:
        keys = (key,) if isinstance(key, str) else key
        self.key = keys[0]
        self.keys = keys
        # What is wrong and what fixes it, for callers that print them apart (preflight).
        self.name = " and ".join(k if k.startswith("(") else f"{NAMESPACE}:{k}" for k in keys)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{self.name}: {problem}. Fix: {fix}")


class ConfigErrors(ConfigError):
    """Several problems of one stack's configuration, raised at once; `errors` holds each (a ConfigError).
    As a ConfigError it reads as its first problem, so callers that show one problem still work."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        self.key, self.keys, self.name, self.problem, self.fix = (
            first.key,
            first.keys,
            first.name,
            first.problem,
            first.fix,
        )
        lines = [f"{len(self.errors)} problems in the stack configuration:"]
        lines += [f"- {error}" for error in self.errors]
        ValueError.__init__(self, "\n".join(lines))


def problems(error: ConfigError) -> tuple[ConfigError, ...]:
    """Each problem an error reports: a ConfigErrors' own, else the error itself."""
    return error.errors if isinstance(error, ConfigErrors) else (error,)


def raise_all(errors: Sequence[ConfigError]) -> None:
    """Raise the problems found, one alone or several as ConfigErrors; nothing when there are none."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)


def set_fix(key: str, example: str) -> str:
    """`example` is shell text as printed (quoted where the shell needs it); load_config names the stack."""
    return f"run `pulumi config set {NAMESPACE}:{key} {example}`"


def list_commands(key: str, elements: Sequence[object]) -> str:
    """The commands that write `key` as a list, one element at a time with `pulumi config set --path`, the
    form Pulumi documents for lists ("pulumi config set --path 'names[0]' a"; usage `pulumi config set <key>
    [flags] [--] [value]`: https://www.pulumi.com/docs/iac/cli/commands/pulumi_config_set/, read 2026-11-27);
    the old value is removed first (a path into a string fails). A value starting with `-` follows `--`."""
    sets = [
        f"pulumi config set --path {shlex.quote(f'{NAMESPACE}:{key}[{index}]')} "
        f"{'-- ' if str(value).startswith('-') else ''}{shlex.quote(str(value))}"
        for index, value in enumerate(elements)
    ]
    return " && ".join([f"pulumi config rm {NAMESPACE}:{key}", *sets])


# A `pulumi config set|rm` command in a fix; load_config adds `--stack <name>` where one is missing, so a
# fix never changes whichever stack happens to be selected.
_CONFIG_COMMAND = re.compile(r"pulumi config (set|rm)\b(?![^`&]*--stack)")


def stack_named(error: ConfigError, stack: str) -> ConfigError:
    """The error with every `pulumi config set|rm` in its fix naming `--stack stack`."""
    if isinstance(error, ConfigErrors):
        return ConfigErrors([stack_named(each, stack) for each in error.errors])
    fix = _CONFIG_COMMAND.sub(lambda m: f"pulumi config {m.group(1)} --stack {stack}", error.fix)
    if fix == error.fix:
        return error
    named = ConfigError(error.keys, error.problem, fix)
    named.__cause__ = error.__cause__
    return named


def rm_fix(key: str, path: bool = False) -> str:
    """The command that removes a key (`path`: one entry inside a map or list key)."""
    where = f"--path {shlex.quote(f'{NAMESPACE}:{key}')}" if path else f"{NAMESPACE}:{key}"
    return f"run `pulumi config rm {where}`"


def set_path_fix(path: str, example: object) -> str:
    """The command that sets one entry inside a map or list key, e.g. `tuning.parallelTrials`."""
    return f"run `pulumi config set --path '{NAMESPACE}:{path}' {example}`"


def path_number(value: Any) -> Any:
    """A number as `pulumi config set --path` stores it: "When setting the config for a path, "true" and
    "false" are treated as boolean values, and integers are treated as numbers. All other values are treated
    as strings" (`pulumi config set --help`, read 2026-11-25), so 0.01 arrives as "0.01". Such a string
    becomes its number; anything else is returned unchanged (and refused, if it must be a number)."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            number = kind(value.strip())
        except ValueError:
            continue
        return number if math.isfinite(number) else value
    return value


class Reader:
    """Reads one namespace's values, which arrive typed (YAML) or as strings (the Pulumi runtime)."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self.values = values

    def raw(self, key: str) -> Any:
        value = self.values.get(f"{NAMESPACE}:{key}")
        return None if value == "" else value

    # In this class body `str` names the method below, so annotations after it spell `builtins.str`.
    @overload
    def str(
        self,
        key: builtins.str,
        default: builtins.str,
        example: builtins.str,
        choices: tuple[builtins.str, ...] = (),
    ) -> builtins.str: ...
    @overload
    def str(
        self, key: builtins.str, default: None, example: builtins.str, choices: tuple[builtins.str, ...] = ()
    ) -> builtins.str | None: ...
    def str(
        self,
        key: builtins.str,
        default: builtins.str | None,
        example: builtins.str,
        choices: tuple[builtins.str, ...] = (),
    ) -> builtins.str | None:
        """The value, or `default` when unset (a str default makes the result a str)."""
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}", set_fix(key, example))
        if choices and value not in choices:
            right = example if example in choices else choices[0]
            raise ConfigError(key, f"{value!r} is not one of {', '.join(choices)}", set_fix(key, right))
        return value

    def bool(self, key: builtins.str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(key, f"expected true or false, got {value!r}", set_fix(key, "true"))

    def number(
        self, key: builtins.str, default: Any, kind: Callable[[Any], Any], example: builtins.str
    ) -> Any:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            raise ConfigError(key, f"expected a number, got {value!r}", set_fix(key, example))
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(key, f"expected a number, got {value!r}", set_fix(key, example)) from None
        if kind is int and isinstance(value, float) and value != number:
            raise ConfigError(key, f"expected a whole number, got {value!r}", set_fix(key, example))
        return number

    def map(self, key: builtins.str, fix: builtins.str) -> Mapping[builtins.str, Any] | None:
        """A map key's value (None when absent); the Pulumi runtime passes a structured value as JSON.
        Not a map: ConfigError with `fix`."""
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a map, got {value!r}", fix)
        return value

    def list(self, key: builtins.str, default: tuple, example: Sequence[object] | None) -> tuple:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = None
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, got {self.raw(key)!r}", self._list_fix(key, example))
        return tuple(value)

    def _list_fix(self, key: builtins.str, example: Sequence[object] | None) -> builtins.str:
        """The commands that write the list: the words of the value given (`python -m x` as a string), else
        the example's; no example (a list of maps): the stack file."""
        raw = self.raw(key)
        try:
            words = shlex.split(raw.replace(",", " ")) if isinstance(raw, str) else []
        except ValueError:
            words = []
        elements = words if len(words) > 1 else example
        if not elements:
            return f"write {key} as a YAML list in the stack file (docs/stack.md)"
        return f"run `{list_commands(key, elements)}` or write a YAML list in the stack file"


def positive(key: str, value: float, example: str, maximum: float | None = None) -> None:
    if value <= 0:
        raise ConfigError(key, f"must be greater than 0, got {value}", set_fix(key, example))
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be at most {maximum}, got {value}", set_fix(key, example))
