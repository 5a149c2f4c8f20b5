"""Typed, validated configuration of the bootstrap stack; errors name the config key and the fix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import overload

from infra import gcp_ids

NAMESPACE = "vertex-training-bootstrap"

_REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
_REPOSITORY_ID = re.compile(r"^[0-9]{1,20}$")
# Workload Identity pool and provider ids: 4-32 chars, lowercase letters, digits, hyphens; "gcp-" is reserved.
_POOL_ID = re.compile(r"^(?!gcp-)[a-z0-9-]{4,32}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$")
# Pulumi stack names double as GitHub environment names for the deploy identity.
_STACK = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key and the fix."""


@dataclass(frozen=True)
class BootstrapConfig:
    project: str
    github_repository: str  # "owner/repo"
    billing_account: str
    region: str  # where the state bucket and the secrets key live
    deploy_stack: str  # the Pulumi stack CI deploys; also the GitHub environment that gates it
    pool_id: str
    provider_id: str
    state_bucket: str
    github_repository_id: str | None = None  # pins the repository against rename-and-recreate


def _key(name: str) -> str:
    return f"{NAMESPACE}:{name}"


@overload
def _string(
    values: Mapping[str, object], name: str, pattern: re.Pattern[str], example: str, default: str
) -> str: ...
@overload
def _string(
    values: Mapping[str, object], name: str, pattern: re.Pattern[str], example: str, default: None = None
) -> str | None: ...
def _string(
    values: Mapping[str, object],
    name: str,
    pattern: re.Pattern[str],
    example: str,
    default: str | None = None,
) -> str | None:
    """The value, or `default` when unset (so a default given makes it a str)."""
    raw = values.get(name, values.get(_key(name)))
    if raw is None or raw == "":
        if default is None:
            return None
        return default
    if not isinstance(raw, str) or not pattern.match(raw):
        raise ConfigError(
            f"{_key(name)} = {raw!r} is not valid; set it with `pulumi config set {name} {example}`"
        )
    return raw


def _required(values: Mapping[str, object], name: str, pattern: re.Pattern[str], example: str) -> str:
    value = _string(values, name, pattern, example)
    if value is None:
        raise ConfigError(f"{_key(name)} is required; set it with `pulumi config set {name} {example}`")
    return value


def load_config(values: Mapping[str, object]) -> BootstrapConfig:
    """Validate raw config values (keys with or without the project namespace)."""
    project = _required(values, "project", gcp_ids.PROJECT_ID, "my-gcp-project")
    repository = _required(values, "githubRepository", _REPOSITORY, "my-org/vertex-training")
    billing_account = _required(values, "billingAccount", gcp_ids.BILLING_ACCOUNT, "012345-6789AB-CDEF01")
    bucket = _string(values, "stateBucket", _BUCKET, f"{project}-pulumi-state", f"{project}-pulumi-state")
    if bucket is not None and ("goog" in bucket or ".." in bucket):
        raise ConfigError(
            f"{_key('stateBucket')} = {bucket!r}: bucket names cannot contain 'goog' or '..'; "
            f"choose another with `pulumi config set stateBucket {project}-pulumi-state`"
        )
    pool_id = _string(values, "poolId", _POOL_ID, "github", "github")
    provider_id = _string(values, "providerId", _POOL_ID, "github-actions", "github-actions")
    return BootstrapConfig(
        project=project,
        github_repository=repository,
        billing_account=billing_account,
        region=_string(values, "region", gcp_ids.REGION, "us-central1", "us-central1"),
        github_repository_id=_string(values, "githubRepositoryId", _REPOSITORY_ID, "123456789"),
        deploy_stack=_string(values, "deployStack", _STACK, "dev", "dev"),
        pool_id=pool_id,
        provider_id=provider_id,
        state_bucket=bucket,
    )
