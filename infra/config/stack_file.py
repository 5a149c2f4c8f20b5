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
    text = path.read_text()
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise yaml_error(path, text, exc) from None
    return dict((document.get("config") or {}) if isinstance(document, dict) else {})


def yaml_error(path: Path, text: str, exc: yaml.YAMLError) -> ConfigError:
    """The parser's own line and column, the line shown, and that line as it would parse where the slip is
    its indentation (the usual mistake in a hand-edited stack file)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ConfigError("(stack file)", f"{path} is not valid YAML: {exc}", f"correct {path.name}")
    lines = text.splitlines()
    shown = lines[mark.line] if mark.line < len(lines) else ""
    number = mark.line + 1
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context_mark", None)
    block = f" (in the block from line {context.line + 1})" if context is not None else ""
    where = (
        f"{path} is not valid YAML: line {number}, column {mark.column + 1}: {problem}{block}:\n"
        f"    {number} | {shown}"
    )
    indent = len(shown) - len(shown.lstrip())
    if context is not None and context.line != mark.line and shown.strip() and indent != context.column:
        fixed = " " * context.column + shown.lstrip()
        return ConfigError(
            "(stack file)", where, f"indent line {number} as line {context.line + 1} is: `{fixed}`"
        )
    if not shown.strip() and context is not None and context.line < len(lines):
        opened = lines[context.line].strip()
        return ConfigError(
            "(stack file)", where, f"close what line {context.line + 1} of {path.name} opens: `{opened}`"
        )
    return ConfigError("(stack file)", where, f"correct line {number} of {path.name}: `{shown.strip()}`")
