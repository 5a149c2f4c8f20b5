"""Pulumi entry point: load the stack's configuration, build the stack, export its outputs."""

import pulumi
from pulumi.runtime import config as runtime_config

from infra.config import ConfigError, load_config
from infra.stack import build

# All of this project's config values (Pulumi hands them over as strings; load_config parses and validates).
values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
try:
    cfg = load_config(values, pulumi.get_stack())
except ConfigError as error:
    # The language host prints a RunError as its message alone; any other exception comes with a traceback
    # under "Program failed with an unhandled exception" (pulumi-language-python-exec).
    raise pulumi.RunError(str(error)) from None
for key, value in build(cfg).items():
    pulumi.export(key, value)
