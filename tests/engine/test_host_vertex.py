"""The real dynamic-provider host, started as the engine starts it, runs Vertex jobs (fake JobService).

Inputs are the Structs the Python SDK serialized for a real CustomJob (tests/engine/inputs.py): in a preview,
with upstream outputs unknown, and in an up.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.cloud import aiplatform_v1
from google.protobuf import empty_pb2
from pulumi.runtime import proto
from pulumi.runtime.rpc import UNKNOWN

from infra.vertex.custom_job import spec
from infra.vertex.lifecycle.checks import KEY_LABEL
from tests.engine.host import ROOT, ProviderHost, engine_launch, plain, secret_paths, this_project
from tests.engine.inputs import SECRET, JobShape, known, recorded

JobState = aiplatform_v1.JobState


def up(host: ProviderHost, shape: JobShape | None = None) -> tuple[Any, Any]:
    """Check then Create, as `pulumi up` does; returns (checked inputs, create response)."""
    checked = host.check(recorded(known(shape or JobShape()), preview=False))
    assert list(checked.failures) == []
    return checked.inputs, host.create(checked.inputs)


def paths_holding(value: Any, needle: str, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in paths_holding(v, needle, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in paths_holding(v, needle, f"{path}[{i}]")]
    return [path] if isinstance(value, str) and needle in value else []


def test_launcher_finds_the_virtualenv_for_this_layout(start_host):
    # Failure 2: the engine starts plugins in the program dir with PULUMI_RUNTIME_VIRTUALENV=.venv as is.
    launch = this_project()
    assert launch.cwd == ROOT and launch.env["PULUMI_RUNTIME_VIRTUALENV"] == ".venv"
    host = start_host(launch)
    assert host.stub.GetPluginInfo(empty_pb2.Empty()).version
    # The launcher (a shell) runs the host with the project's virtualenv interpreter.
    members = [Path(f"/proc/{pid}/exe").resolve() for pid in host.group_members() if pid != host.process.pid]
    assert members == [(ROOT / ".venv/bin/python").resolve()]


def test_launcher_rejects_a_main_subfolder_layout(tmp_path):
    # pulumi/pulumi#7061: with `main: infra/` the relative virtualenv is taken against infra/, which has none.
    project = {**yaml.safe_load((ROOT / "Pulumi.yaml").read_text()), "main": "infra/"}
    with pytest.raises(RuntimeError, match=r'infra/\.venv", but ".*" doesn\'t exist'):
        ProviderHost(engine_launch(project, ROOT), tmp_path / "stderr")


def test_handshake_is_unimplemented_and_configure_declines_secrets(start_host):
    host = start_host()
    with pytest.raises(grpc.RpcError) as raised:
        host.stub.Handshake(proto.ProviderHandshakeRequest(engine_address="127.0.0.1:1"))
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED  # the engine then goes on to Configure
    # So the engine strips secrets from inputs and re-marks matching outputs secret (annotateSecrets).
    assert host.configure().acceptSecrets is False


def test_preview_with_unknown_upstream_outputs_passes_check(checking_host):
    # Failure 1: service account, image and args (built with apply) unknown; wait unknown too.
    host = checking_host
    shape = JobShape(unknown=frozenset({"service_account", "image_uri", "args", "wait", "base_output_dir"}))
    preview = recorded(shape, preview=True)
    sent = plain(preview)
    assert sent["service_account"] == UNKNOWN and sent["worker_pools"][0]["args"] == UNKNOWN
    checked = host.check(preview)
    assert [(f.property, f.reason) for f in checked.failures] == []
    returned = plain(checked.inputs)
    # Unknowns go back to the engine as unknowns, defaults are filled in.
    assert returned["service_account"] == UNKNOWN and returned["wait"] == UNKNOWN
    assert returned["worker_pools"][0]["image_uri"] == UNKNOWN
    assert returned["queue_timeout_seconds"] == spec.DEFAULTS["queue_timeout_seconds"]


def test_check_through_the_host_still_rejects_bad_known_inputs(checking_host):
    host = checking_host
    bad = recorded(known(JobShape(base_output_dir="/tmp/not-a-bucket")), preview=False)
    checked = host.check(bad)
    assert [f.property for f in checked.failures] == ["base_output_dir"]


@pytest.mark.parametrize(
    ("unknown", "replaces"),
    [
        (frozenset({"image_uri"}), ["worker_pools"]),
        (frozenset({"service_account", "args"}), ["worker_pools", "service_account"]),
        (frozenset({"wait"}), []),
    ],
)
def test_preview_diff_replaces_only_where_a_replacing_input_is_unknown(
    fake_vertex, start_host, unknown, replaces
):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    _, created = up(host)
    preview = host.check(recorded(JobShape(unknown=unknown), preview=True), olds=created.properties).inputs
    diff = host.diff(created.id, created.properties, preview)
    assert diff.changes == proto.DiffResponse.DIFF_SOME
    assert sorted(diff.replaces) == sorted(replaces)
    assert diff.deleteBeforeReplace == bool(replaces)


def test_lifecycle_create_read_diff_update_delete(fake_vertex, start_host):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    _, created = up(host)
    outs = plain(created.properties)
    assert created.id.startswith("projects/demo-project/locations/us-central1/customJobs/")
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["job_name"] == created.id
    assert outs["model_dir"] == "gs://demo-bucket/runs/1/model/"
    (job,) = fake_vertex.jobs.values()
    assert job.labels[KEY_LABEL] and job.job_spec.service_account == "trainer@demo-project.iam"
    read = host.read(created.id, created.properties)
    assert read.id == created.id and plain(read.properties)["state"] == "JOB_STATE_SUCCEEDED"
    same = host.diff(
        created.id, created.properties, host.check(recorded(known(JobShape()), preview=False)).inputs
    )
    assert same.changes == proto.DiffResponse.DIFF_NONE  # the serialized provider itself causes no diff
    nowait = host.check(recorded(known(JobShape(wait=False)), preview=False)).inputs
    in_place = host.diff(created.id, created.properties, nowait)
    assert in_place.changes == proto.DiffResponse.DIFF_SOME and list(in_place.replaces) == []
    updated = plain(host.update(created.id, created.properties, nowait).properties)
    assert updated["wait"] is False and updated["job_name"] == created.id and "worker_pools" in updated
    host.delete(created.id, created.properties)
    assert fake_vertex.jobs == {}
    assert host.read(created.id, created.properties).id == ""  # gone
    assert fake_vertex.methods().count("CreateCustomJob") == 1


def test_failed_job_reaches_the_cli_as_one_paragraph(fake_vertex, start_host):
    # Failure 4: the host answers with traceback.format_exc(); the user reads the error, not Python frames.
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    fake_vertex.outcome = JobState.JOB_STATE_FAILED
    fake_vertex.outcome_error = "The following quota metrics exceed quota limits: aiplatform.googleapis.com/x"
    fake_vertex.outcome_error_code = 8
    with pytest.raises(grpc.RpcError) as raised:
        up(host)
    details = raised.value.details()
    (name,) = fake_vertex.jobs
    assert details.startswith("infra.vertex.lifecycle.errors.JobError: Training job " + name)
    assert "Traceback" not in details and 'File "' not in details and "\n\n" not in details.strip()
    assert "(error code 8 RESOURCE_EXHAUSTED)" in details and "iam-admin/quotas" in details
    assert f"training/{name.rsplit('/', 1)[-1]}?project=demo-project" in details


def test_api_error_reaches_the_cli_without_its_chain(fake_vertex, start_host):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    quota = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED, message=f"exceeded: {quota}")
    with pytest.raises(grpc.RpcError) as raised:
        up(host)
    details = raised.value.details().strip()
    assert details.count("\n") == 0, details
    assert quota in details and "fallbackRegions" in details
    assert "above exception" not in details and "Traceback" not in details


def test_delete_of_a_running_job_cancels_then_deletes(fake_vertex, start_host):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    fake_vertex.auto_advance = False
    _, created = up(host, JobShape(wait=False))
    fake_vertex.set_state(created.id, JobState.JOB_STATE_RUNNING)
    host.delete(created.id, created.properties)
    methods = fake_vertex.methods()
    assert methods.index("CancelCustomJob") < methods.index("DeleteCustomJob")
    assert fake_vertex.jobs == {}


def test_secret_env_is_only_where_the_engine_keeps_it_secret(fake_vertex, start_host):
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    sdk_inputs = recorded(known(JobShape()), preview=False)
    assert "worker_pools[0].env.WANDB_API_KEY" in secret_paths(sdk_inputs)
    _, created = up(host)
    outs = plain(created.properties)
    # annotateSecrets marks an output secret where the same input held one: only worker_pools here (a list,
    # so the whole list). Anywhere else the secret would be stored in plain text in the state.
    assert {p.split("[")[0].split(".")[0] for p in paths_holding(outs, SECRET)} == {"worker_pools"}
    assert SECRET not in host.stderr()
    (job,) = fake_vertex.jobs.values()
    env = {e.name: e.value for e in job.job_spec.worker_pool_specs[0].container_spec.env}
    assert env["WANDB_API_KEY"] == SECRET  # the job itself gets it


def test_interrupted_up_leaves_the_job_running_and_the_next_host_adopts_it(fake_vertex, start_host):
    address = os.environ["VERTEX_AI_EMULATOR_HOST"]
    first = start_host(VERTEX_AI_EMULATOR_HOST=address)
    fake_vertex.auto_advance = False
    inputs = first.check(recorded(known(JobShape()), preview=False)).inputs
    errors: list[Exception] = []

    def create() -> None:
        try:
            first.create(inputs, timeout=60)
        except grpc.RpcError as exc:
            errors.append(exc)

    waiting = threading.Thread(target=create)
    waiting.start()
    for _ in range(200):
        if fake_vertex.jobs:
            break
        time.sleep(0.05)
    (name,) = fake_vertex.jobs
    fake_vertex.set_state(name, JobState.JOB_STATE_RUNNING)
    how = first.interrupt_like_the_engine()  # Ctrl-C: SIGINT to the group, 5 s, SIGKILL
    waiting.join(timeout=30)
    # SIGINT alone does not end a host whose create is waiting (its worker threads are joined at exit).
    assert how == "killed" and errors
    # SIGKILL is delivered at once, but a loaded machine may take a moment to end every process of the group.
    for _ in range(100):
        if not first.group_members():
            break
        time.sleep(0.05)
    assert first.group_members() == []
    assert fake_vertex.jobs[name].state == JobState.JOB_STATE_RUNNING  # the job runs on, billing

    second = start_host(VERTEX_AI_EMULATOR_HOST=address)
    adopted = second.create(second.check(recorded(known(JobShape(wait=False)), preview=False)).inputs)
    assert adopted.id == name and fake_vertex.methods().count("CreateCustomJob") == 1
    assert "adopting" in second.stderr()
    second.delete(adopted.id, adopted.properties)
    assert fake_vertex.jobs == {}


def test_the_host_runs_at_most_four_waiting_creates_at_once(fake_vertex, start_host):
    # pulumi/dynamic/__main__.py serves on ThreadPoolExecutor(max_workers=4): a fifth waiting job queues.
    host = start_host(VERTEX_AI_EMULATOR_HOST=os.environ["VERTEX_AI_EMULATOR_HOST"])
    fake_vertex.auto_advance = False
    shapes = [known(JobShape(args=("--epochs", str(n)))) for n in range(5)]
    inputs = [host.check(recorded(shape, preview=False)).inputs for shape in shapes]
    threads = [threading.Thread(target=host.create, args=(props,)) for props in inputs]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(fake_vertex.jobs) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    assert len(fake_vertex.jobs) == 4  # the fifth create has not even started
    first = next(iter(fake_vertex.jobs))
    fake_vertex.set_state(first, JobState.JOB_STATE_SUCCEEDED)
    while len(fake_vertex.jobs) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_vertex.jobs) == 5
    for name in list(fake_vertex.jobs):
        fake_vertex.set_state(name, JobState.JOB_STATE_SUCCEEDED)
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)


def test_preview_with_strategy_and_unknown_fallbacks_passes_check(checking_host):
    """The new props through the real host: unknown fallbacks in a preview, then known ones checked."""
    host = checking_host
    chain = (
        {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},
        {
            "machine_type": "a2-highgpu-1g",
            "accelerator_type": "NVIDIA_TESLA_A100",
            "scheduling_strategy": "FLEX_START",
        },
    )
    shape = JobShape(
        unknown=frozenset({"service_account", "image_uri", "args", "fallbacks"}),
        scheduling_strategy="SPOT",
        max_wait_seconds=3600,
        fallbacks=chain,
    )
    preview = host.check(recorded(shape, preview=True))
    assert [(f.property, f.reason) for f in preview.failures] == []
    assert plain(preview.inputs)["fallbacks"] == UNKNOWN and plain(preview.inputs)["spot"] is True
    up_inputs = host.check(recorded(known(shape), preview=False))
    assert list(up_inputs.failures) == [] and plain(up_inputs.inputs)["fallbacks"] == [dict(f) for f in chain]
    bad = host.check(
        recorded(
            known(replace(shape, fallbacks=({"machine_type": "g2-standard-8"},), max_wait_seconds=None)),
            preview=False,
        )
    )
    assert [f.property for f in bad.failures] == ["fallbacks[0].machine_type"]


RESERVATION = {
    "type": "SPECIFIC_RESERVATION",
    "reservation": "projects/demo-project/zones/us-central1-a/reservations/r",
}


def test_preview_with_unknown_regions_reservation_and_deadline_passes_check(checking_host):
    """Issue 25's props through the real host: unknown in a preview (built from an upstream output), then
    known and checked; a reservation in a zone outside the job's region is still refused."""
    host = checking_host
    shape = JobShape(
        unknown=frozenset(
            {"service_account", "image_uri", "args", "fallback_regions", "reservation_affinity",
             "capacity_deadline_seconds"}
        ),
        fallbacks=({"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},),
        fallback_regions=("us-east4", "europe-west4"),
        reservation_affinity=RESERVATION,
        capacity_deadline_seconds=3600,
    )  # fmt: skip
    sent = plain(recorded(shape, preview=True))
    assert sent["fallback_regions"] == UNKNOWN and sent["reservation_affinity"] == UNKNOWN
    preview = host.check(recorded(shape, preview=True))
    assert [(f.property, f.reason) for f in preview.failures] == []
    returned = plain(preview.inputs)
    assert returned["fallback_regions"] == UNKNOWN and returned["reservation_affinity"] == UNKNOWN
    assert returned["capacity_deadline_seconds"] == UNKNOWN

    up_inputs = host.check(recorded(known(shape), preview=False))
    assert [(f.property, f.reason) for f in up_inputs.failures] == []
    checked = plain(up_inputs.inputs)
    assert checked["fallback_regions"] == ["us-east4", "europe-west4"]
    assert checked["reservation_affinity"] == RESERVATION and checked["capacity_deadline_seconds"] == 3600

    elsewhere = {**RESERVATION, "reservation": "projects/demo-project/zones/us-east4-a/reservations/r"}
    bad = host.check(recorded(known(replace(shape, reservation_affinity=elsewhere)), preview=False))
    # The job's reservation; the L4 fallback (other machines) does not inherit it (placement.inherits).
    assert [f.property for f in bad.failures] == ["reservation_affinity"]
    assert "us-central1" in bad.failures[0].reason


def test_preview_of_a_job_with_known_regions_reservation_and_deadline_passes_check(checking_host):
    """The stacks' case: the new keys come from stack config (known); the image, account and args do not."""
    host = checking_host
    shape = JobShape(
        fallbacks=({"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"},),
        fallback_regions=("us-east4",),
        reservation_affinity={"type": "ANY_RESERVATION"},
        capacity_deadline_seconds=1800,
    )
    preview = host.check(recorded(shape, preview=True))
    assert [(f.property, f.reason) for f in preview.failures] == []
    returned = plain(preview.inputs)
    assert returned["service_account"] == UNKNOWN and returned["worker_pools"][0]["image_uri"] == UNKNOWN
    assert returned["fallback_regions"] == ["us-east4"] and returned["capacity_deadline_seconds"] == 1800
    assert returned["reservation_affinity"] == {"type": "ANY_RESERVATION"}
