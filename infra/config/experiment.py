"""The `experiment` key: the Vertex AI experiment a cloud stack's training jobs are compared in.

Default: `vertex-training-<stack>` (the stack's name under the project's: Vertex wants context ids of 4-128
characters, `dev` has 3, and one Google Cloud project may hold several projects' `dev` stacks). `false` turns
the link off. A stack with `tensorboard: true` is not linked unless asked, and cannot be: Google's SDK refuses
a CustomJob with both (a run logs to its experiment's own TensorBoard). Local stacks have no experiment.
"""

from __future__ import annotations

import re

from infra.config.reader import NAMESPACE, ConfigError, Reader, set_fix

KEYS = ("experiment",)
# Vertex MetadataService CreateContext: "Must be 4-128 characters in length. Valid characters are
# /[a-z][0-9]-/"; a run's id `<experiment>-train-<12 hex>` must also fit the SDK's 121 characters
# (custom_job/experiments.py MAX_RUN_CONTEXT_ID): at most 102 here.
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{3,101}")
_OFF = (False, "false")


def default_experiment(stack: str) -> str:
    return f"{NAMESPACE}-{stack}"


def read_experiment(read: Reader, stack: str, cloud: bool, tensorboard: bool) -> str | None:
    value = read.raw("experiment")
    if value in _OFF or not cloud:
        return None
    if value is None or value in (True, "true"):
        if tensorboard and value is None:
            return None
        name = default_experiment(stack)
    elif isinstance(value, str) and _NAME.fullmatch(value):
        name = value
    else:
        raise ConfigError(
            "experiment",
            f"{value!r} is not an experiment name (4-102 lowercase letters, digits or dashes)",
            set_fix("experiment", default_experiment(stack)),
        )
    if tensorboard:
        raise ConfigError(
            "experiment",
            "cannot be set with tensorboard: true (Vertex AI's SDK refuses a job with both)",
            "remove one of them: `pulumi config rm vertex-training:experiment` or set tensorboard false",
        )
    return name
