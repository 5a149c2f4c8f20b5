"""Pulumi entry point: load the stack's configuration, build the stack, export its outputs."""

import pulumi
from pulumi.runtime import config as runtime_config

from infra.config import load_config
from infra.stack import build

# All of this project's config values (Pulumi hands them over as strings; load_config parses and validates).
values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
for key, value in build(load_config(values, pulumi.get_stack())).items():
    pulumi.export(key, value)
