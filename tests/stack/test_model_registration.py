"""registerModel: the prod stack registers the trained model as a Model Registry version after training."""

from __future__ import annotations

import pytest

from infra.config import ConfigError
from infra.vertex.custom_job.resource import RESOURCE_TYPE as CUSTOM_JOB
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from tests.stack.conftest import cached_run, stack_config


def test_prod_registers_the_trained_model_after_training_as_the_job_identity() -> None:
    run = cached_run("prod")
    model = run.one(MODEL_VERSION)
    train = run.named("train")
    assert train.type == CUSTOM_JOB
    assert train.urn in model.dependencies  # uploaded only once the training job succeeded
    inputs = model.inputs
    assert inputs["model_id"] == "vertex-training-prod" and inputs["display_name"] == "vertex-training-prod"
    assert inputs["artifact_uri"] == train.inputs["base_output_dir"] + "/model/"
    assert inputs["service_account"] == train.inputs["service_account"]  # reads the bucket already
    assert inputs["version_aliases"] == ["candidate"]
    assert inputs["labels"]["pulumi_stack"] == "prod" and inputs["project"] == train.inputs["project"]
    # Each retraining replaces the version (new artifact_uri); Pulumi refuses to replace a protected resource,
    # so prod keeps its versions in the Registry with retain_on_delete instead.
    assert model.retain_on_delete and not model.protect
    outputs = run.outputs
    assert {"model_name", "model_version_id", "model_console_url"} <= set(outputs)


@pytest.mark.parametrize("stack", ["local", "dev", "cassava"])
def test_other_stacks_register_nothing(stack: str) -> None:
    run = cached_run(stack)
    assert run.by_type(MODEL_VERSION) == []
    assert run.outputs["model_name"] == "" and run.outputs["model_version_id"] == ""


def test_config_keys_name_the_problem() -> None:
    cfg = stack_config("dev", registerModel=True, modelDisplayName="cats", modelVersionAliases=["stage"])
    assert cfg.model_registry.register and cfg.model_registry.display_name == "cats"
    assert cfg.model_registry.version_aliases == ("stage",)
    with pytest.raises(ConfigError, match="registerModel: needs the vertex runner"):
        stack_config("local", registerModel=True)
    with pytest.raises(ConfigError, match="modelVersionAliases: 'default' is not a version alias"):
        stack_config("dev", modelVersionAliases=["default"])
    with pytest.raises(ConfigError, match="modelDisplayName: must be 1 to 128"):
        stack_config("dev", modelDisplayName="x" * 129)
