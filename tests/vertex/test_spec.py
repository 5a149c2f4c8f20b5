"""spec.py: props -> aiplatform_v1.CustomJob, defaults, the job key, and every check() rejection."""

import re

import pytest
from google.cloud import aiplatform_v1
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from infra.labels import stack_labels
from infra.vertex.custom_job import spec
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.output_files import output_dirs
from tests.vertex.props import custom_job_request, job_props, pool

Strategy = aiplatform_v1.Scheduling.Strategy


def build(**overrides):
    props = spec.with_defaults(job_props(**overrides))
    assert spec.validate(props) == []
    return custom_job_request(props)


def test_one_gpu_job_spec():
    job = build()
    assert job.display_name == "train-densenet"
    (chief,) = job.job_spec.worker_pool_specs
    assert chief.machine_spec.machine_type == "n1-standard-8"
    assert chief.machine_spec.accelerator_type == aiplatform_v1.AcceleratorType.NVIDIA_TESLA_T4
    assert chief.machine_spec.accelerator_count == 1
    assert chief.replica_count == 1
    assert chief.disk_spec.boot_disk_size_gb == 100
    assert chief.container_spec.image_uri.endswith("a" * 64)
    assert list(chief.container_spec.command) == ["python", "-m", "trainer.task"]
    assert list(chief.container_spec.args) == ["--epochs", "2"]
    assert [(e.name, e.value) for e in chief.container_spec.env] == [("TF_USE_LEGACY_KERAS", "1")]
    assert job.job_spec.service_account == "trainer@demo-project.iam.gserviceaccount.com"
    assert job.job_spec.base_output_directory.output_uri_prefix == "gs://demo-bucket/runs/1"
    assert job.job_spec.scheduling.timeout.seconds == 3600
    assert job.job_spec.scheduling.strategy == Strategy.STANDARD
    assert not job.job_spec.scheduling.restart_job_on_worker_restart
    assert job.job_spec.tensorboard == ""
    assert job.labels["pulumi_stack"] == "dev"
    assert job.labels[KEY_LABEL] == spec.job_key(spec.with_defaults(job_props()))


def test_several_gpus_on_one_machine():
    job = build(
        worker_pools=[
            pool(machine_type="n1-standard-16", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=2)
        ]
    )
    machine = job.job_spec.worker_pool_specs[0].machine_spec
    assert machine.accelerator_type == aiplatform_v1.AcceleratorType.NVIDIA_TESLA_V100
    assert machine.accelerator_count == 2


def test_chief_plus_workers_and_cpu_pool():
    job = build(
        worker_pools=[
            pool(),
            pool(replica_count=3),
            pool(machine_type="e2-standard-4", accelerator_type=None, accelerator_count=0),
        ]
    )
    chief, workers, ps = job.job_spec.worker_pool_specs
    assert (chief.replica_count, workers.replica_count, ps.replica_count) == (1, 3, 1)
    assert ps.machine_spec.accelerator_count == 0
    assert ps.machine_spec.accelerator_type == aiplatform_v1.AcceleratorType.ACCELERATOR_TYPE_UNSPECIFIED


def test_spot_restart_timeout_and_tensorboard():
    tensorboard = "projects/demo-project/locations/us-central1/tensorboards/7"
    job = build(spot=True, restart_on_worker_restart=True, timeout_seconds=7200, tensorboard=tensorboard)
    assert job.job_spec.scheduling.strategy == Strategy.SPOT
    assert job.job_spec.scheduling.restart_job_on_worker_restart
    assert job.job_spec.scheduling.timeout.seconds == 7200
    assert job.job_spec.tensorboard == tensorboard


def test_pulumi_doubles_become_integers_and_defaults_fill_in():
    raw = job_props(
        timeout_seconds=3600.0, worker_pools=[{**pool(accelerator_count=2.0), "replica_count": 1.0}]
    )
    for key in ("wait", "poll_interval_seconds", "runner", "spot"):
        raw.pop(key)
    props = spec.with_defaults(raw)
    assert props["timeout_seconds"] == 3600 and isinstance(props["timeout_seconds"], int)
    assert props["worker_pools"][0]["accelerator_count"] == 2
    assert (props["wait"], props["poll_interval_seconds"], props["runner"], props["spot"]) == (
        True,
        30,
        "vertex",
        False,
    )
    assert spec.validate(props) == []


def test_key_is_deterministic_and_ignores_wait_and_poll():
    base = spec.with_defaults(job_props())
    assert spec.job_key(base) == spec.job_key(spec.with_defaults(job_props(timeout_seconds=3600.0)))
    assert spec.job_key(base) == spec.job_key({**base, "wait": False, "poll_interval_seconds": 99})
    assert spec.job_key(base) != spec.job_key({**base, "worker_pools": [pool(args=["--epochs", "3"])]})
    assert len(spec.job_key(base)) <= 63


def test_output_dirs_follow_vertex():
    assert output_dirs("gs://b/run/") == {
        "AIP_MODEL_DIR": "gs://b/run/model/",
        "AIP_CHECKPOINT_DIR": "gs://b/run/checkpoints/",
        "AIP_TENSORBOARD_LOG_DIR": "gs://b/run/logs/",
    }


def failures(**overrides):
    return spec.validate(spec.with_defaults(job_props(**overrides)))


@pytest.mark.parametrize(
    ("overrides", "prop", "words"),
    [
        ({"worker_pools": []}, "worker_pools", "at least one pool"),
        ({"worker_pools": [pool(replica_count=2)]}, "worker_pools[0].replica_count", "chief"),
        ({"worker_pools": [pool(), pool(replica_count=0)]}, "worker_pools[1].replica_count", "positive"),
        (
            {"worker_pools": [pool(accelerator_type=None, accelerator_count=2)]},
            "worker_pools[0].accelerator_type",
            "not set",
        ),
        (
            {"worker_pools": [pool(accelerator_type="NVIDIA_TESLA_T5")]},
            "worker_pools[0].accelerator_type",
            "unknown",
        ),
        ({"worker_pools": [pool(accelerator_count=0)]}, "worker_pools[0].accelerator_count", "is 0"),
        (
            {"worker_pools": [pool(machine_type="g2-standard-8")]},
            "worker_pools[0].machine_type",
            "cannot take NVIDIA_TESLA_T4",
        ),
        (
            {"worker_pools": [pool(machine_type="n1-standard-8", accelerator_type="NVIDIA_L4")]},
            "worker_pools[0].machine_type",
            "g2",
        ),
        (
            {"worker_pools": [pool(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_H100_80GB")]},
            "worker_pools[0].machine_type",
            "a3",
        ),
        (
            {"worker_pools": [pool(machine_type="e2-standard-8")]},
            "worker_pools[0].machine_type",
            "cannot take",
        ),
        (
            {
                "worker_pools": [
                    pool(machine_type="a2-highgpu-1g", accelerator_type=None, accelerator_count=0)
                ]
            },
            "worker_pools[0].accelerator_type",
            "comes with GPUs",
        ),
        ({"worker_pools": [pool(image_uri="")]}, "worker_pools[0].image_uri", "required"),
        ({"worker_pools": [pool(boot_disk_size_gb=10)]}, "worker_pools[0].boot_disk_size_gb", ">= 100"),
        ({"worker_pools": [pool()] * 5}, "worker_pools", "at most 4"),
        ({"timeout_seconds": 0}, "timeout_seconds", "positive"),
        ({"timeout_seconds": -5}, "timeout_seconds", "positive"),
        ({"labels": {"Team": "ml"}}, "labels", "label key 'Team'"),
        ({"labels": {"team": "ML Ops"}}, "labels", "label value 'ML Ops'"),
        ({"labels": {"team": "x" * 64}}, "labels", "label value"),
        ({"labels": {KEY_LABEL: "abc"}}, "labels", "reserved"),
        # The provider adds three: the job key, the attempt and, on a resubmission, the spend carried over.
        ({"labels": {"vertex_training_spent": "100-1"}}, "labels", "reserved"),
        ({"labels": {f"k{i}": "v" for i in range(62)}}, "labels", "at most 61"),
        ({"base_output_dir": "/tmp/out"}, "base_output_dir", "gs:// URI"),
        ({"runner": "k8s"}, "runner", "one of vertex, local"),
        ({"project": ""}, "project", "required"),
        ({"poll_interval_seconds": 0}, "poll_interval_seconds", "positive"),
        ({"spot": "yes"}, "spot", "true or false"),
    ],
)
def test_check_rejects(overrides, prop, words):
    found = failures(**overrides)
    assert any(p == prop and words in reason for p, reason in found), found


def test_local_runner_accepts_a_local_dir_but_needs_a_command():
    assert failures(runner="local", base_output_dir="/tmp/out") == []
    assert failures(runner="local", project="", region="", service_account="", base_output_dir="out") == []
    found = failures(runner="local", base_output_dir="/tmp/out", worker_pools=[pool(command=[])])
    assert [p for p, _ in found] == ["worker_pools[0].command"]


def test_valid_families_accept_their_gpus():
    for machine, gpu, count in [
        ("g2-standard-12", "NVIDIA_L4", 1),
        ("a2-ultragpu-1g", "NVIDIA_A100_80GB", 1),
        ("a3-highgpu-8g", "NVIDIA_H100_80GB", 8),  # accelerator-optimized: the GPUs it comes with
        ("a3-ultragpu-8g", "NVIDIA_H200_141GB", 8),
        ("n1-highmem-8", "NVIDIA_TESLA_P100", 1),
    ]:
        shape = pool(machine_type=machine, accelerator_type=gpu, accelerator_count=count)
        assert failures(worker_pools=[shape]) == [], machine


# The N1 vCPU limits per GPU count (machines.py's sources): each just inside and just outside its limit.
@pytest.mark.parametrize(
    ("machine", "gpu", "count", "allowed", "limit"),
    [
        ("n1-standard-16", "NVIDIA_TESLA_V100", 1, "2, 4 or 8", 12),
        ("n1-standard-32", "NVIDIA_TESLA_V100", 2, "4 or 8", 24),
        ("n1-highcpu-64", "NVIDIA_TESLA_V100", 4, "exactly 8", 48),
        ("n1-standard-64", "NVIDIA_TESLA_T4", 1, "exactly 4", 48),
        ("n1-highmem-96", "NVIDIA_TESLA_T4", 2, "exactly 4", 48),
        ("n1-highmem-32", "NVIDIA_TESLA_P4", 1, "2 or 4", 24),
        ("n1-standard-64", "NVIDIA_TESLA_P4", 2, "exactly 4", 48),
        ("n1-standard-32", "NVIDIA_TESLA_P100", 1, "2 or 4", 16),
        ("n1-highcpu-64", "NVIDIA_TESLA_P100", 2, "exactly 4", 32),
    ],
)
def test_n1_refuses_more_vcpus_than_its_gpu_count_allows(machine, gpu, count, allowed, limit):
    shape = pool(machine_type=machine, accelerator_type=gpu, accelerator_count=count)
    ((prop, reason),) = failures(worker_pools=[shape])
    assert prop == "worker_pools[0].accelerator_count"
    assert reason.startswith(f"machine type {machine} takes {allowed} {gpu}, not {count} ")
    assert f"at most {limit} vCPUs" in reason


def test_n1_accepts_every_gpu_count_up_to_its_vcpu_limit():
    for machine, gpu, count in [
        ("n1-standard-8", "NVIDIA_TESLA_V100", 1),
        ("n1-highmem-16", "NVIDIA_TESLA_V100", 2),
        ("n1-standard-32", "NVIDIA_TESLA_V100", 4),
        ("n1-standard-96", "NVIDIA_TESLA_V100", 8),
        ("n1-standard-32", "NVIDIA_TESLA_T4", 1),
        ("n1-highcpu-32", "NVIDIA_TESLA_T4", 2),
        ("n1-highmem-96", "NVIDIA_TESLA_T4", 4),
        ("n1-highcpu-16", "NVIDIA_TESLA_P4", 1),
        ("n1-standard-32", "NVIDIA_TESLA_P4", 2),
        ("n1-standard-96", "NVIDIA_TESLA_P4", 4),
        ("n1-highmem-16", "NVIDIA_TESLA_P100", 1),
        ("n1-standard-32", "NVIDIA_TESLA_P100", 2),
        ("n1-highcpu-96", "NVIDIA_TESLA_P100", 4),
    ]:
        shape = pool(machine_type=machine, accelerator_type=gpu, accelerator_count=count)
        assert failures(worker_pools=[shape]) == [], (machine, gpu, count)


# Every accelerator-optimized machine type's GPU count, as the sources in machines.py give it.
ATTACHED = {
    **{f"g2-standard-{n}": ("NVIDIA_L4", 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("NVIDIA_L4", 2),
    "g2-standard-48": ("NVIDIA_L4", 4),
    "g2-standard-96": ("NVIDIA_L4", 8),
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    "a4-highgpu-8g": ("NVIDIA_B200", 8),
    "a4x-highgpu-4g": ("NVIDIA_GB200", 4),
    **{f"g4-standard-{48 * n}": ("NVIDIA_RTX_PRO_6000", n) for n in (1, 2, 4, 8)},
}


@pytest.mark.parametrize("machine", sorted(ATTACHED))
def test_accelerator_optimized_types_take_exactly_their_gpus(machine):
    gpu, count = ATTACHED[machine]
    assert (
        failures(worker_pools=[pool(machine_type=machine, accelerator_type=gpu, accelerator_count=count)])
        == []
    )
    wrong = pool(machine_type=machine, accelerator_type=gpu, accelerator_count=count * 2)
    assert failures(worker_pools=[wrong]) == [
        (
            "worker_pools[0].accelerator_count",
            f"machine type {machine} takes exactly {count} {gpu}, not {count * 2}",
        )
    ]


def test_unknown_preview_values_are_not_rejected():
    props = spec.with_defaults(
        job_props(
            project=UNKNOWN,
            service_account=UNKNOWN,
            base_output_dir=UNKNOWN,
            worker_pools=[pool(image_uri=UNKNOWN, args=["--data-dir", UNKNOWN])],
        )
    )
    assert spec.validate(props) == []
    assert spec.validate(spec.with_defaults(job_props(worker_pools=UNKNOWN))) == []
    assert spec.validate(spec.with_defaults(job_props(worker_pools=[pool(), UNKNOWN]))) == []


@pytest.mark.parametrize("unknown", [Unknown(), UNKNOWN], ids=["Unknown object", "sentinel string"])
def test_unknowns_in_every_form_pass_check(unknown):
    # Failure 1: the host gives check pulumi.output.Unknown objects (keep_unknowns=True), not the sentinel.
    forms = [
        {"service_account": unknown, "project": unknown, "display_name": unknown, "base_output_dir": unknown},
        {"wait": unknown, "spot": unknown, "timeout_seconds": unknown, "runner": unknown},
        {"queue_timeout_seconds": unknown, "poll_interval_seconds": unknown, "labels": unknown},
        {"labels": {"pulumi_stack": unknown}},
        {"worker_pools": unknown},
        {"worker_pools": [pool(), unknown]},
        {"worker_pools": [pool(image_uri=unknown, args=unknown, env=unknown, command=unknown)]},
        {"worker_pools": [pool(args=["--data-dir", unknown], env={"A": unknown}, machine_type=unknown)]},
        {"worker_pools": [pool(accelerator_type=unknown, accelerator_count=unknown, replica_count=unknown)]},
        {"worker_pools": [pool(boot_disk_type=unknown, boot_disk_size_gb=unknown)]},
    ]
    for overrides in forms:
        props = spec.with_defaults(job_props(**overrides))
        assert spec.validate(props) == [], overrides
        assert all(spec.is_unknown(v) for v in overrides.values())


def test_known_values_are_not_unknown():
    assert not spec.is_unknown(spec.with_defaults(job_props()))
    assert spec.is_unknown({"a": [1, {"b": Unknown()}]})


def test_label_keys_named_in_list_filters_use_only_simple_characters():
    # Vertex documents list filters on simple label keys; the job key and the kill switch's stack labels.
    filtered = [KEY_LABEL, *(stack_labels("vertex-training", "dev").keys() - {"managed-by"})]
    for key in filtered:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key), key
    assert {"pulumi_project", "pulumi_stack"} <= stack_labels("vertex-training", "dev").keys()
    assert custom_job_request(spec.with_defaults(job_props())).labels[KEY_LABEL]


@pytest.mark.parametrize("missing", ["", None])
def test_a_vertex_job_without_a_service_account_is_refused(missing):
    """Vertex AI would run it as its Custom Code Service Agent, which can mint tokens for every account."""
    found = failures(service_account=missing)
    assert [p for p, _ in found] == ["service_account"]
