"""The stack program run as a first `pulumi preview` runs it, without an engine: under Pulumi's mock runtime
(`pulumi.runtime.set_mocks`) every resource it declares is recorded, and nothing is created or read.

As in a first preview, nothing exists yet, so whatever a provider would compute stays unknown.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dill
import pulumi
import yaml
from pulumi.dynamic import ResourceProvider
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import ROOT, SETTINGS
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

# The input in which pulumi.dynamic.Resource sends its provider, pickled (pulumi/dynamic/dynamic.py).
PROVIDER_INPUT = "__provider"
STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Declared:
    """One resource the program declared: its type token, name and inputs (unknowns as pulumi.output.Unknown,
    as the dynamic-provider host hands them to check)."""

    type: str
    name: str
    inputs: dict[str, Any]

    def provider(self) -> ResourceProvider | None:
        """A dynamic resource's provider, unpickled as the dynamic-provider host does; None for others."""
        # The SDK sends it as a secret (pulumi/dynamic/dynamic.py: Output.secret(serialize_provider(...))).
        pickled = rpc.unwrap_rpc_secret(self.inputs.get(PROVIDER_INPUT))
        if not isinstance(pickled, str):
            return None
        provider = dill.loads(base64.b64decode(pickled.encode()))
        return provider if isinstance(provider, ResourceProvider) else None

    def props(self) -> dict[str, Any]:
        """The inputs a dynamic provider's check is handed (its own pickle left out)."""
        return {k: v for k, v in self.inputs.items() if k != PROVIDER_INPUT}


class _Preview(pulumi.runtime.Mocks):
    """A first preview: no resource exists, so every output a provider computes stays unknown."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return "", {"name": args.name, **args.inputs}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, []  # no result, no check failures


class _Recorder(pulumi_mocks.MockMonitor):
    """The stock mock monitor, noting every registration (components too) in order."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.declared: list[Declared] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != STACK_TYPE:
            inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.declared.append(Declared(request.type, request.name, dict(inputs)))
        return response


def project_name(root: Path) -> str:
    """The Pulumi project's name (Pulumi.yaml `name`), which the program reads as pulumi.get_project()."""
    return str(yaml.safe_load((root / "Pulumi.yaml").read_text())["name"])


def declared(program: Callable[[], Any], project: str, stack: str) -> list[Declared]:
    """Run `program` (e.g. `lambda: build(cfg)`) as a first preview; what it declared, in order."""
    monitor = _Recorder(_Preview())
    ROOT.set(None)  # set_mocks keeps an existing root Stack, which would carry another stack's name
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()

    def body() -> None:
        _sync_await(pulumi.Output.from_input(program()).future())

    _sync_await(run_pulumi_func(body))
    return monitor.declared
