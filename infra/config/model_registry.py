"""Model Registry keys: whether the trained model becomes a version of the stack's Vertex AI model, and its
name and aliases. Off unless a stack turns it on (Pulumi.prod.yaml does; dev and the others do not)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from infra.config.reader import ConfigError, Reader, set_fix

KEYS = ("registerModel", "modelDisplayName", "modelVersionAliases")
# Model.version_aliases: a lowercase letter, then letters, digits or '-'; ends in a lowercase letter or digit.
_ALIAS = re.compile(r"^[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]$")


@dataclass(frozen=True)
class ModelRegistryConfig:
    register: bool
    display_name: str
    # Besides `default`, which always follows the newest version.
    version_aliases: tuple[str, ...]


NOT_REGISTERED = ModelRegistryConfig(register=False, display_name="", version_aliases=())


def read_model_registry(read: Reader, stack: str, runner: str) -> ModelRegistryConfig:
    register = read.bool("registerModel", False)
    if register and runner != "vertex":
        raise ConfigError(
            "registerModel",
            f"needs the vertex runner (runner is {runner}: the model is on this machine, and "
            "`.venv/bin/python -m trainer.predict --model-dir <model-dir> <images>` serves it here)",
            set_fix("registerModel", "false"),
        )
    display_name = read.str("modelDisplayName", f"vertex-training-{stack}", "cats-vs-dogs")
    if not 0 < len(display_name) <= 128:
        raise ConfigError(
            "modelDisplayName", "must be 1 to 128 characters", set_fix("modelDisplayName", "cats-vs-dogs")
        )
    aliases = read.list("modelVersionAliases", ("candidate",), ("candidate",))
    for alias in aliases:
        if not isinstance(alias, str) or not _ALIAS.match(alias) or alias == "default":
            raise ConfigError(
                "modelVersionAliases",
                f"{alias!r} is not a version alias like candidate (a lowercase letter, then letters, digits "
                "or '-', ending in a lowercase letter or digit; `default` is set by the stack itself)",
                set_fix("modelVersionAliases", "'[\"candidate\"]'"),
            )
    return ModelRegistryConfig(register=register, display_name=display_name, version_aliases=tuple(aliases))
