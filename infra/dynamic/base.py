"""What every dynamic provider of this project shares: plain errors, check, diff and a log prefix.

A provider names its props module (`spec`: with_defaults, validate, INPUTS, IN_PLACE_INPUTS) and overrides
the hooks that differ; the providers are pickled by reference, so none of this is captured in state.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

from pulumi.dynamic import CheckFailure, CheckResult, ConfigureRequest, DiffResult, ResourceProvider

from infra.dynamic.errors import plain_errors
from infra.dynamic.preview_inputs import changed_inputs


class _Named(dict[str, Any]):
    """Props for a log prefix: a key they lack reads as "?" rather than failing the call that logs."""

    def __missing__(self, key: str) -> str:
        return "?"


class SpecProvider(ResourceProvider):
    """configure / check / diff from a props module; create/read/update/delete are the subclass's."""

    # An instance annotation: a provider class body assigns its spec module (mypy reads a module assigned
    # over a ClassVar as an instance variable).
    spec: ModuleType
    # The serialized provider is a class reference (dill, by reference) that holds no secret: keep it out
    # of Pulumi's secrets unless a captured Output is secret (pulumi/dynamic/dynamic.py, 3.272;
    # pulumi/pulumi#15864: the default True makes every serialization an encrypt call with a cloud secrets
    # backend, #15538).
    # State written with the default (a secret `__provider`) still loads: the host unpickles it the same way.
    serialize_as_secret_always = False
    # Delete the old resource before creating its replacement (two runs of one job would share outputs).
    delete_before_replace: ClassVar[bool] = False
    # Inputs fixed when the resource is made that no later change applies to (diff never reports them).
    fixed_inputs: ClassVar[tuple[str, ...]] = ()

    def configure(self, req: ConfigureRequest) -> None:
        # Only the dynamic-provider host calls configure, once per process.
        plain_errors()

    # How stderr lines name the resource, from its props: "[image {image_name}:{tag}] ...".
    log_format: ClassVar[str]

    def log_name(self, props: Mapping[str, Any]) -> str:
        return self.log_format.format_map(_Named(props))

    def log(self, props: Mapping[str, Any], message: str) -> None:
        # The provider's stderr reaches the Pulumi CLI.
        print(f"[{self.log_name(props)}] {message}", file=sys.stderr, flush=True)

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        """What check prints about valid props (e.g. what the job may cost)."""
        return []

    def replaces(self, olds: dict[str, Any], news: dict[str, Any], changed: list[str]) -> list[str]:
        """The changed inputs that need a new resource."""
        return [k for k in changed if k not in self.spec.IN_PLACE_INPUTS]

    def replacing(self, olds: dict[str, Any], news: dict[str, Any]) -> None:
        """Called when diff decides to replace, to say what the replacement means."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        props = self.spec.with_defaults(news)
        failures = [CheckFailure(prop, reason) for prop, reason in self.spec.validate(props)]
        if not failures:
            for line in self.preview_lines(props):
                self.log(props, line)
        return CheckResult(props, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # An explicit answer either way: with changes=None the engine would diff `__provider` too.
        olds, news = self.spec.with_defaults(olds), self.spec.with_defaults(news)
        compared = [k for k in self.spec.INPUTS if k not in self.fixed_inputs]
        changed = changed_inputs(olds, news, compared)
        replaces = self.replaces(olds, news, changed)
        if replaces:
            self.replacing(olds, news)
            return DiffResult(
                changes=True, replaces=replaces, delete_before_replace=self.delete_before_replace
            )
        return DiffResult(changes=bool(changed), replaces=[])
