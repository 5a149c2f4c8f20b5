"""The dynamic-provider host started the way the Pulumi engine starts it, and driven over its gRPC API.

What the engine does, read from pulumi/pulumi at 1b5949891b3c (pulumi 3.27x):
- sdk/go/common/resource/plugin/provider_plugin.go: runtime options from Pulumi.yaml become
  `PULUMI_RUNTIME_<OPTION>` (fmt `%v`, unchanged), plus `PULUMI_PROJECT` and `PULUMI_CONFIG`; the plugin gets
  the engine's address as its only argument and runs in `ctx.Pwd`, the program directory (`main:` or root).
- sdk/go/common/resource/plugin/plugin.go: `cmdutil.RegisterProcessGroup` (own process group); killing a
  plugin is SIGINT to the group, 5 s, then SIGKILL (`cmdutil.InterruptChildren` / `KillChildren`).
- The plugin is `pulumi-resource-pulumi-python` (sdk/python/dist, copied unchanged next to this file), which
  resolves the virtualenv against `$PWD` and runs `python -u -m pulumi.dynamic`; that prints its port.
- Providers that do not accept secrets get their inputs with secrets removed (`removeSecrets`); the engine
  marks outputs secret where the matching inputs held secrets (`annotateSecrets`).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime import proto, rpc
from pulumi.runtime.proto import provider_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = Path(__file__).with_name("pulumi-resource-pulumi-python")
ENGINE_ADDRESS = "127.0.0.1:1"  # the host ignores it; the engine always passes one
URN = "urn:pulumi:dev::vertex-training::pulumi-python:dynamic/vertex:CustomJob::train"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


@dataclass(frozen=True)
class Launch:
    """Where and with what environment the engine starts a plugin for one project."""

    cwd: Path
    env: dict[str, str]


def engine_launch(project: Mapping[str, Any], project_dir: Path, **extra_env: str) -> Launch:
    """The working directory and environment the engine gives plugins for this Pulumi.yaml content."""
    options = (project.get("runtime") or {}).get("options") or {}
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update({f"PULUMI_RUNTIME_{k.upper()}": _go_format(v) for k, v in options.items()})
    env.update({"PULUMI_PROJECT": project["name"], "PULUMI_CONFIG": "{}", **extra_env})
    return Launch(cwd=(project_dir / project.get("main", ".")).resolve(), env=env)


def this_project(**extra_env: str) -> Launch:
    return engine_launch(yaml.safe_load((ROOT / "Pulumi.yaml").read_text()), ROOT, **extra_env)


def _go_format(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def without_secrets(value: Any) -> Any:
    """A serialized value as the engine sends it to a provider that does not accept secrets."""
    if isinstance(value, struct_pb2.Struct):
        if value.fields.get(rpc._special_sig_key) and value[rpc._special_sig_key] == SECRET_SIG:
            return without_secrets(value.fields["value"])
        out = struct_pb2.Struct()
        for key, item in value.fields.items():
            out.fields[key].CopyFrom(without_secrets(item))
        return out
    if isinstance(value, struct_pb2.ListValue):
        out_list = struct_pb2.ListValue()
        for item in value.values:
            out_list.values.add().CopyFrom(without_secrets(item))
        return out_list
    if isinstance(value, struct_pb2.Value):
        kind = value.WhichOneof("kind")
        if kind == "struct_value":
            inner = without_secrets(value.struct_value)
            if isinstance(inner, struct_pb2.Value):
                return inner
            return struct_pb2.Value(struct_value=inner)
        if kind == "list_value":
            return struct_pb2.Value(list_value=without_secrets(value.list_value))
        return value
    raise TypeError(type(value))


def secret_paths(value: Any, path: str = "") -> list[str]:
    """Property paths that the SDK marked secret in a serialized Struct."""
    if isinstance(value, struct_pb2.Value):
        kind = value.WhichOneof("kind")
        if kind == "struct_value":
            return secret_paths(value.struct_value, path)
        if kind == "list_value":
            return [p for i, v in enumerate(value.list_value.values) for p in secret_paths(v, f"{path}[{i}]")]
        return []
    if value.fields.get(rpc._special_sig_key) and value[rpc._special_sig_key] == SECRET_SIG:
        return [path]
    return [p for k, v in value.fields.items() for p in secret_paths(v, f"{path}.{k}" if path else k)]


def plain(value: Any) -> Any:
    """A Struct as dicts and lists, values as sent (unknowns stay the sentinel string)."""
    if isinstance(value, struct_pb2.Struct):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, struct_pb2.ListValue):
        return [plain(v) for v in value]
    return value


class ProviderHost:
    """One dynamic-provider host process, as the engine runs it, with a ResourceProvider stub."""

    def __init__(self, launch: Launch, stderr_path: Path, ready_seconds: float = 60.0):
        self.stderr_path = stderr_path
        with open(stderr_path, "ab") as stderr:
            self.process = subprocess.Popen(
                ["/bin/sh", str(LAUNCHER), ENGINE_ADDRESS],
                cwd=launch.cwd,
                env=launch.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
        self.port = self._read_port(ready_seconds)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)

    def _read_port(self, seconds: float) -> int:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], seconds)
        line = self.process.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            self.process.wait(timeout=10)
            raise RuntimeError(f"host printed {line!r}, exit {self.process.returncode}: {self.stderr()}")
        return int(line)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    # --- the engine's calls ------------------------------------------------------------------------------
    def configure(self) -> proto.ConfigureResponse:
        return self.stub.Configure(
            proto.ConfigureRequest(args=struct_pb2.Struct(), acceptSecrets=True, acceptResources=True)
        )

    def check(self, news: struct_pb2.Struct, olds: struct_pb2.Struct | None = None) -> proto.CheckResponse:
        return self.stub.Check(
            proto.CheckRequest(urn=URN, olds=olds or struct_pb2.Struct(), news=without_secrets(news))
        )

    def diff(self, id_: str, olds: struct_pb2.Struct, news: struct_pb2.Struct) -> proto.DiffResponse:
        return self.stub.Diff(proto.DiffRequest(id=id_, urn=URN, olds=olds, news=without_secrets(news)))

    def create(self, props: struct_pb2.Struct, timeout: float = 120) -> proto.CreateResponse:
        return self.stub.Create(proto.CreateRequest(urn=URN, properties=props), timeout=timeout)

    def read(self, id_: str, props: struct_pb2.Struct) -> proto.ReadResponse:
        return self.stub.Read(proto.ReadRequest(id=id_, urn=URN, properties=props))

    def update(self, id_: str, olds: struct_pb2.Struct, news: struct_pb2.Struct) -> proto.UpdateResponse:
        return self.stub.Update(proto.UpdateRequest(id=id_, urn=URN, olds=olds, news=news), timeout=120)

    def delete(self, id_: str, props: struct_pb2.Struct) -> None:
        self.stub.Delete(proto.DeleteRequest(id=id_, urn=URN, properties=props), timeout=120)

    # --- the engine's shutdown ---------------------------------------------------------------------------
    def interrupt_like_the_engine(self) -> str:
        """SIGINT to the process group, 5 s, then SIGKILL: how the engine kills a plugin on Ctrl-C."""
        os.killpg(self.process.pid, signal.SIGINT)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and self.process.poll() is None:
            time.sleep(0.05)
        if self.process.poll() is not None:
            return "exited on SIGINT"
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        return "killed"

    def group_members(self) -> list[int]:
        """Live (not zombie) processes still in the host's process group."""
        members = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if int(fields[2]) == self.process.pid and fields[0] != "Z":
                members.append(int(stat.parent.name))
        return members

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
