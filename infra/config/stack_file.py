"""A stack's configuration read from its `Pulumi.<stack>.yaml`, for commands that run outside `pulumi up`.

The values go through the same `load_config` as the program, so a command sees what `pulumi up` would.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from infra.config import REPO_ROOT, StackConfig, load_config
from infra.config.reader import ConfigError


def stack_path(stack: str, root: Path = REPO_ROOT) -> Path:
    return root / f"Pulumi.{stack}.yaml"


def load_stack(stack: str, root: Path = REPO_ROOT, *, allow_example_ids: bool = False) -> StackConfig:
    """The validated config of `stack`; ConfigError when its file is missing or unreadable, ConfigErrors
    naming each problem when it has several."""
    path = stack_path(stack, root)
    if not path.is_file():
        known = sorted(
            p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml")
        )
        raise ConfigError(
            "(stack name)",
            f"no stack file {path.name} in {root}",
            f"name one of the stacks here ({', '.join(known) or 'none'}), or `pulumi stack init` one",
        )
    return load_config(stack_values(stack, root), stack, root, allow_example_ids=allow_example_ids)


def stack_values(stack: str, root: Path = REPO_ROOT) -> dict[str, object]:
    """The `config:` section of Pulumi.<stack>.yaml (the values Pulumi hands the program)."""
    path = stack_path(stack, root)
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError("(stack file)", f"{path} is not valid YAML: {exc}", "fix the file") from None
    return dict((document.get("config") or {}) if isinstance(document, dict) else {})
