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


def load_stack(
    stack: str, root: Path = REPO_ROOT, *, allow_example_ids: bool = False, inputs_present: bool = True
) -> StackConfig:
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
    return load_config(
        stack_values(stack, root),
        stack,
        root,
        allow_example_ids=allow_example_ids,
        inputs_present=inputs_present,
    )


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
    """The parser's own line and column with the line shown, and a fix for that line: its indentation as the
    line before it (the usual slip in a hand-edited stack file), the bracket it leaves open, or the line."""
    return ConfigError("(stack file)", *_yaml_problem(path, text, exc))


def _yaml_problem(path: Path, text: str, exc: yaml.YAMLError) -> tuple[str, str]:
    lines = text.splitlines()
    mark = getattr(exc, "problem_mark", None)
    position = getattr(exc, "position", None)  # a character YAML does not take (yaml.reader.ReaderError)
    if mark is None and not isinstance(position, int):
        return f"{path} is not valid YAML: {exc}", f"correct {path.name}"
    if mark is None:
        number = text.count("\n", 0, position) + 1
        shown = lines[number - 1] if number <= len(lines) else ""
        character = getattr(exc, "character", None)
        code = f" (U+{character:04X})" if isinstance(character, int) else ""
        what = f"{getattr(exc, 'reason', exc)}{code}"
        return (
            f"{path} is not valid YAML: line {number}: {what}:\n    {number} | {shown!r}",
            f"remove that character from line {number} of {path.name}",
        )
    number, shown = mark.line + 1, lines[mark.line] if mark.line < len(lines) else ""
    problem = getattr(exc, "problem", None) or exc
    where = f"{path} is not valid YAML: line {number}, column {mark.column + 1}: {problem}:\n"
    where += f"    {number} | {shown}"
    above = [line for line in lines[: mark.line] if line.strip() and not line.lstrip().startswith("#")]
    before = above[-1] if above else ""
    indent, before_indent = (len(line) - len(line.lstrip()) for line in (shown, before))
    if shown.strip() and before and not before.rstrip().endswith(":") and indent != before_indent:
        fixed = " " * before_indent + shown.lstrip()
        return where, f"indent line {number} as the line before it: `{fixed}`"
    context = getattr(exc, "context_mark", None)
    if not shown.strip() and context is not None and context.line < len(lines):
        return (
            where,
            f"close what line {context.line + 1} of {path.name} opens: `{lines[context.line].strip()}`",
        )
    return where, f"correct line {number} of {path.name}: `{shown.strip()}`"
