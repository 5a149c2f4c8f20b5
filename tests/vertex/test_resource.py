"""CustomJob resource: props on the wire under Pulumi's mocks; its serialized provider in a fresh process."""

import base64
import json
import os
import subprocess
import sys
import textwrap

import dill
import pulumi
from pulumi.runtime.rpc import unwrap_rpc_secret

from infra.vertex.custom_job.resource import RESOURCE_TYPE, CustomJob, CustomJobArgs, WorkerPool
from infra.vertex.provider import CustomJobProvider
from tests.fakes.pulumi_mocks import run_program
from tests.vertex.props import PROJECT, REGION


def args(image: pulumi.Input[str] = "us-docker.pkg.dev/p/r/trainer@sha256:abc", **overrides) -> CustomJobArgs:
    return CustomJobArgs(
        project=PROJECT,
        region=REGION,
        display_name="train-densenet",
        worker_pools=[
            WorkerPool(
                machine_type="n1-standard-8",
                image_uri=image,
                command=["python", "-m", "trainer.task"],
                args=["--data-dir", pulumi.Output.from_input("gs://b/data")],
                accelerator_type="NVIDIA_TESLA_T4",
                accelerator_count=1,
            ),
            WorkerPool(machine_type="n1-standard-8", image_uri=image, command=["python"], replica_count=2),
        ],
        service_account=f"trainer@{PROJECT}.iam.gserviceaccount.com",
        base_output_dir="gs://b/runs/1",
        labels={"managed-by": "pulumi"},
        timeout_seconds=3600,
        spot=True,
        **overrides,
    )


def test_resource_registers_contract_props_and_exposes_outputs():
    def program():
        job = CustomJob("train", args(poll_interval_seconds=0.05))
        return {
            "display_name": job.display_name,
            "outputs": [job.job_name, job.state, job.model_dir, job.error],
        }

    run = run_program(program)
    registered = run.one(RESOURCE_TYPE)
    inputs = registered.inputs
    assert inputs["project"] == PROJECT and inputs["region"] == REGION
    assert inputs["spot"] is True and inputs["timeout_seconds"] == 3600
    assert inputs["poll_interval_seconds"] == 0.05 and inputs["runner"] == "vertex" and inputs["wait"] is True
    chief, workers = inputs["worker_pools"]
    assert chief["args"] == ["--data-dir", "gs://b/data"]  # nested Outputs resolved
    assert chief["accelerator_type"] == "NVIDIA_TESLA_T4"
    assert "accelerator_type" not in workers  # None is left out, not sent as null
    assert workers["replica_count"] == 2
    assert "tensorboard" not in inputs
    assert "__provider" in inputs
    assert run.outputs["display_name"] == "train-densenet"
    assert len(run.outputs["outputs"]) == 4


def test_serialized_provider_is_a_reference_with_no_captured_state():
    run = run_program(lambda: CustomJob("train", args()).urn)
    serialized = unwrap_rpc_secret(run.one(RESOURCE_TYPE).inputs["__provider"])
    assert len(serialized) < 200  # the class by reference: no client, config or secret inside
    provider = dill.loads(base64.b64decode(serialized))
    assert isinstance(provider, CustomJobProvider)
    assert vars(provider) == {}


FRESH_PROCESS = textwrap.dedent(
    """
    import base64, json, sys
    import dill
    provider = dill.loads(base64.b64decode(sys.argv[1]))
    props = json.loads(sys.argv[2])
    checked = provider.check({}, props)
    assert not checked.failures, [(f.property, f.reason) for f in checked.failures]
    created = provider.create(checked.inputs)
    read = provider.read(created.id, created.outs)
    provider.delete(created.id, created.outs)
    gone = provider.read(created.id, created.outs)
    print(json.dumps({"id": created.id, "state": created.outs["state"], "read": read.outs["state"],
                      "gone": gone.id, "provider_module": type(provider).__module__}))
    """
)


def test_serialized_provider_loads_and_works_in_a_fresh_process(fake_vertex):
    run = run_program(lambda: CustomJob("train", args(poll_interval_seconds=0.01)).urn)
    registered = run.one(RESOURCE_TYPE).inputs
    serialized = unwrap_rpc_secret(registered["__provider"])
    props = {k: v for k, v in registered.items() if k != "__provider"}
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, serialized, json.dumps(props)],
        env={**os.environ, "VERTEX_AI_EMULATOR_HOST": os.environ["VERTEX_AI_EMULATOR_HOST"]},
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",  # like `python -m pulumi.dynamic`: the provider must come from the installed package
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["state"] == "JOB_STATE_SUCCEEDED" and out["read"] == "JOB_STATE_SUCCEEDED"
    assert out["gone"] == ""
    assert out["provider_module"] == "infra.vertex.provider"
    assert fake_vertex.methods().count("CreateCustomJob") == 1
    assert fake_vertex.jobs == {}  # deleted by the fresh process
