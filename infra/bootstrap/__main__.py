"""Entry point of the bootstrap project: load config, build, export."""

import pulumi

from infra.bootstrap.config import NAMESPACE, load_config
from infra.bootstrap.stack import build

_config = pulumi.Config(NAMESPACE)
_keys = (
    "project",
    "githubRepository",
    "githubRepositoryId",
    "billingAccount",
    "region",
    "deployStack",
    "poolId",
    "providerId",
    "stateBucket",
)
for _name, _value in build(load_config({k: _config.get(k) for k in _keys})).items():
    pulumi.export(_name, _value)
