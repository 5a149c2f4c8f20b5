"""Provider props for tests: a small valid job, with overrides."""

from typing import Any

PROJECT = "demo-project"
REGION = "us-central1"


def pool(**overrides: Any) -> dict[str, Any]:
    return {
        "machine_type": "n1-standard-8",
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 1,
        "replica_count": 1,
        "image_uri": "us-central1-docker.pkg.dev/demo-project/trainer/trainer@sha256:" + "a" * 64,
        "command": ["python", "-m", "trainer.task"],
        "args": ["--epochs", "2"],
        "env": {"TF_USE_LEGACY_KERAS": "1"},
        "boot_disk_size_gb": 100,
        **overrides,
    }


def job_props(**overrides: Any) -> dict[str, Any]:
    return {
        "project": PROJECT,
        "region": REGION,
        "display_name": "train-densenet",
        "worker_pools": [pool()],
        "service_account": f"trainer@{PROJECT}.iam.gserviceaccount.com",
        "base_output_dir": "gs://demo-bucket/runs/1",
        "labels": {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": "dev"},
        "timeout_seconds": 3600,
        "spot": False,
        "restart_on_worker_restart": False,
        "wait": True,
        "poll_interval_seconds": 0.01,
        "runner": "vertex",
        **overrides,
    }


def custom_job_request(props: Any, shape: Any = 0, kind: Any = None) -> Any:
    """The Vertex request a kind (default: CustomJob) builds for these (validated, defaulted) props on
    `shape`, or on the chain's shape of that index (0: the primary); every shape carries the key label."""
    from infra.vertex.custom_job.kind import CUSTOM_JOB
    from infra.vertex.lifecycle.request import JobRequest

    spec = (kind or CUSTOM_JOB).spec
    shape = JobRequest.parse(kind or CUSTOM_JOB, props).chain[shape] if isinstance(shape, int) else shape
    return spec.build_job(spec.body(props).on(shape), spec.job_key(props))


def tuning_job_request(props: Any, shape: Any = 0) -> Any:
    from infra.vertex.tuning.kind import TUNING_JOB

    return custom_job_request(props, shape, TUNING_JOB)


def batch_job_request(props: Any, shape: Any = None) -> Any:
    from infra.vertex.batch.kind import BATCH_PREDICTION_JOB

    return custom_job_request(props, 0 if shape is None else shape, BATCH_PREDICTION_JOB)


def placed(props: Any, kind: Any = None, shape: Any = None) -> Any:
    """The props parsed as the provider parses them (JobRequest.parse), on `shape` (default: the chain's
    first), as the lifecycle hands them to a kind's hooks and to the cost cap."""
    from infra.vertex.custom_job.kind import CUSTOM_JOB
    from infra.vertex.lifecycle.request import JobRequest

    request = JobRequest.parse(kind or CUSTOM_JOB, props)
    return request.on(shape if shape is not None else request.chain[0])
