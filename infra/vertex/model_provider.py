"""ModelVersionProvider: the dynamic provider that registers a trained model as a Model Registry version.
Pickled by reference into every stack's state: keep this module's path and the class name as they are."""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, ReadResult

from infra.dynamic.base import SpecProvider
from infra.dynamic.errors import ProviderError
from infra.vertex.model import spec as model_spec
from infra.vertex.model.registry import ModelRegistry, VersionStatus
from infra.vertex.serving_container import unservable


def _registry(props: dict[str, Any]) -> ModelRegistry:
    project, region = props["project"], props["region"]
    return ModelRegistry(project, region, f"projects/{project}/locations/{region}/models/{props['model_id']}")


def _outputs(props: dict[str, Any], version: VersionStatus) -> dict[str, Any]:
    return {
        **{k: props[k] for k in model_spec.INPUTS if k in props},
        "model_name": version.model_name,
        "version_id": version.version_id,
        "version_name": version.version_name,
        "console_url": model_spec.console_url(
            props["project"], props["region"], props["model_id"], version.version_id
        ),
        "aliases": version.aliases,
        "create_time": version.create_time,
    }


class ModelVersionProvider(SpecProvider):
    """Create/read/delete one version of the stack's parent model; every input change is a new version (the
    new one is uploaded before the old one is deleted: `default` never points nowhere)."""

    spec = model_spec

    log_format = "model {model_id}"

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = model_spec.with_defaults(props)
        registry = _registry(props)
        version = registry.find_by_key(model_spec.model_key(props))
        if version is not None:
            self.log(props, f"adopting {version.version_name}, uploaded earlier with the same inputs")
        else:
            if reason := unservable(props["artifact_uri"]):
                raise ProviderError(f"model {props['model_id']}: {reason}")
            version = registry.upload(
                model_spec.build_model(props), props["model_id"], props.get("service_account", "")
            )
            self.log(props, f"uploaded {version.version_name}")
        # Also after an adoption: the interrupted create may have stopped between upload and aliases.
        aliases = [a for a in props["version_aliases"] if a != model_spec.DEFAULT_ALIAS]
        version = registry.move_aliases(version, aliases)
        self.log(props, f"registered {version.version_name} (aliases {', '.join(version.aliases)})")
        return CreateResult(version.version_name, _outputs(props, version))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = model_spec.with_defaults(props)
        version = _registry(props).get(id_)
        if version is None:
            return ReadResult("", {})
        return ReadResult(id_, _outputs(props, version))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = model_spec.with_defaults(props)
        registry = _registry(props)
        version = registry.get(id_)
        if version is None:
            return
        registry.delete(version)
        self.log(props, f"deleted {id_}")
