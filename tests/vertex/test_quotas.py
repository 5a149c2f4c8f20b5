"""The quota pre-check: the real CloudQuotasClient against a fake Cloud Quotas service."""

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import cloudquotas_v1
from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import CloudQuotasGrpcTransport

from infra.dynamic.endpoints import client_kwargs
from infra.vertex.capacity import quotas
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import placing
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.provider import CustomJobProvider
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.vertex import FakeJobService
from tests.vertex.props import PROJECT, REGION, job_props, placed, pool

T4 = "CustomModelTrainingT4GPUsPerProjectPerRegion"
T4_SPOT = "CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion"
T4_METRIC = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
CPUS = "CustomModelTrainingCPUsPerProjectPerRegion"


@pytest.fixture
def services(
    fake_vertex_and_quotas: tuple[FakeJobService, FakeCloudQuotas],
) -> tuple[FakeJobService, FakeCloudQuotas]:
    return fake_vertex_and_quotas


def create(**overrides):
    provider = CustomJobProvider()
    return provider.create(provider.check({}, job_props(**overrides)).inputs)


def test_zero_quota_fails_before_submitting_with_name_value_need_and_link(services) -> None:
    jobs, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=0, metric=T4_METRIC)
    with pytest.raises(JobError) as raised:
        create()
    message = str(raised.value)
    assert T4 in message and T4_METRIC in message
    assert f"region {REGION} is 0; this job needs 1 " in message
    assert f"https://console.cloud.google.com/iam-admin/quotas?project={PROJECT}" in message
    assert "CreateCustomJob" not in jobs.methods(), "nothing was submitted"


def test_a_spot_job_short_of_the_preemptible_quota_is_warned_about_and_submitted(services, capsys) -> None:
    """No Vertex source ties Spot training to the Preemptible ids (quotas.py): a shortfall only warns."""
    jobs, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=0)
    fake_quotas.set_quota(PROJECT, T4_SPOT, default=0)
    assert create(spot=True).outs["state"] == "JOB_STATE_SUCCEEDED"
    assert "CreateCustomJob" in jobs.methods()
    warnings = [line for line in capsys.readouterr().err.splitlines() if T4_SPOT in line]
    assert len(warnings) == 1 and "needs 1 Spot (preemptible) NVIDIA_TESLA_T4 GPU(s)" in warnings[0]


def test_the_regions_own_value_overrides_the_default(services) -> None:
    _, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=0, regions={REGION: 2, "europe-west4": 16})
    assert create(worker_pools=[pool(accelerator_count=2)]).outs["state"] == "JOB_STATE_SUCCEEDED"
    with pytest.raises(JobError, match=f"region {REGION} is 2; this job needs 4 "):
        create(worker_pools=[pool(accelerator_count=4)])


def test_the_need_counts_every_replica_of_every_pool(services) -> None:
    _, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=5)
    pools = [pool(accelerator_count=2), pool(accelerator_count=2, replica_count=2)]
    with pytest.raises(JobError, match="is 5; this job needs 6 "):
        create(worker_pools=pools, restart_on_worker_restart=True)


def test_permission_denied_warns_once_and_submits(services, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, fake_quotas = services
    fake_quotas.denied = True
    assert create().outs["state"] == "JOB_STATE_SUCCEEDED"
    warnings = [line for line in capsys.readouterr().err.splitlines() if "Quota pre-check" in line]
    assert len(warnings) == 1 and "roles/cloudquotas.viewer" in warnings[0]
    assert "CreateCustomJob" in jobs.methods()


def test_an_unpublished_quota_id_warns_and_submits(services, capsys: pytest.CaptureFixture[str]) -> None:
    jobs, _ = services
    assert create().outs["state"] == "JOB_STATE_SUCCEEDED"
    assert "NOT_FOUND" in capsys.readouterr().err
    assert "CreateCustomJob" in jobs.methods()


def test_cpu_jobs_are_checked_against_the_cpu_quota(services) -> None:
    jobs, fake_quotas = services
    cpu_only = [pool(accelerator_type=None, accelerator_count=0, machine_type="n1-standard-8")]
    fake_quotas.set_quota(PROJECT, CPUS, default=4)
    with pytest.raises(JobError, match=f"{CPUS}.*region {REGION} is 4; this job needs 8 vCPUs"):
        create(worker_pools=cpu_only)
    assert "CreateCustomJob" not in jobs.methods()
    fake_quotas.set_quota(PROJECT, CPUS, default=8)
    assert create(worker_pools=cpu_only).outs["state"] == "JOB_STATE_SUCCEEDED"


def test_a_missing_cpu_quota_id_still_checks_the_gpus(services, capsys: pytest.CaptureFixture[str]) -> None:
    _, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=0)
    with pytest.raises(JobError, match=T4):
        create()
    fake_quotas.set_quota(PROJECT, T4, default=1)
    assert create().outs["state"] == "JOB_STATE_SUCCEEDED"
    assert f"reading {CPUS} failed (NOT_FOUND" in capsys.readouterr().err


def test_the_local_runner_reads_no_quota(services, tmp_path) -> None:
    _, fake_quotas = services
    local = placed({**job_props(), "runner": "local", "base_output_dir": str(tmp_path)})
    assert placing.quota_shortfall(CUSTOM_JOB, local) is None
    assert fake_quotas.calls == []


@pytest.mark.parametrize(
    ("machine", "vcpus"),
    [
        ("n1-standard-8", 8),
        ("n1-highmem-16", 16),
        ("g2-standard-12", 12),
        ("a2-highgpu-2g", 24),
        ("a3-highgpu-8g", 208),
        ("ct5lp-hightpu-4t", None),
    ],
)
def test_machine_vcpus_follow_compute_engine_machine_tables(machine: str, vcpus: int | None) -> None:
    assert quotas.machine_vcpus(machine) == vcpus


def test_an_adopted_job_is_not_checked_again(services) -> None:
    """An interrupted `pulumi up` resumes watching its job even if the quota has since dropped."""
    jobs, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=1)
    create(wait=False)
    fake_quotas.set_quota(PROJECT, T4, default=0)
    create(wait=False)
    assert jobs.methods().count("CreateCustomJob") == 1


def test_every_mapped_accelerator_has_a_quota_id_of_vertex_form() -> None:
    for kind in quotas.QUOTA_GPU_NAMES:
        for spot in (False, True):
            quota_id = quotas.gpu_quota_id(kind, spot)
            assert quota_id.startswith("CustomModelTraining") and quota_id.endswith("GPUsPerProjectPerRegion")
            assert ("Preemptible" in quota_id) is spot


def test_the_fake_answers_as_the_api_reference_describes(services) -> None:
    """Through the real client: list per service, NOT_FOUND for unknown ids, INVALID_ARGUMENT for bad ones."""
    _, fake_quotas = services
    fake_quotas.set_quota(PROJECT, T4, default=0, regions={REGION: 1})
    fake_quotas.set_quota(PROJECT, T4_SPOT, default=0)
    client = cloudquotas_v1.CloudQuotasClient(**client_kwargs(CloudQuotasGrpcTransport, quotas.ENDPOINT))
    parent = f"projects/{PROJECT}/locations/global/services/aiplatform.googleapis.com"
    listed = list(client.list_quota_infos(request={"parent": parent, "page_size": 1}))
    assert sorted(info.quota_id for info in listed) == sorted([T4, T4_SPOT])
    info = client.get_quota_info(name=f"{parent}/quotaInfos/{T4}")
    assert quotas.region_value(info, REGION) == 1 and quotas.region_value(info, "asia-east1") == 0
    with pytest.raises(gexc.NotFound):
        client.get_quota_info(name=f"{parent}/quotaInfos/NoSuchQuota")
    with pytest.raises(gexc.InvalidArgument):
        client.get_quota_info(name="projects/x/quotaInfos/y")


def test_missing_credentials_warn_and_leave_the_error_to_submission(monkeypatch, capsys) -> None:
    """Without the emulator and without Application Default Credentials the check steps aside."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    def no_credentials(*_args, **_kwargs):
        raise DefaultCredentialsError("Your default credentials were not found.")

    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    monkeypatch.setattr(google.auth, "default", no_credentials)
    assert placing.quota_shortfall(CUSTOM_JOB, placed(job_props())) is None
    assert "no credentials to read quotas" in capsys.readouterr().err


def test_a_g2_job_is_not_refused_by_the_n1_e2_vcpu_quota(services, capsys) -> None:
    _, fake_quotas = services
    fake_quotas.set_quota(PROJECT, CPUS, default=0)
    fake_quotas.set_quota(PROJECT, "CustomModelTrainingL4GPUsPerProjectPerRegion", default=1)
    l4 = [pool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4")]
    assert create(worker_pools=l4).outs["state"] == "JOB_STATE_SUCCEEDED"
    read = [req.name.rsplit("/", 1)[-1] for method, req in fake_quotas.calls if method == "GetQuotaInfo"]
    assert read == ["CustomModelTrainingL4GPUsPerProjectPerRegion"]
    notes = [line for line in capsys.readouterr().err.splitlines() if "not checked" in line]
    assert len(notes) == 1 and "vCPUs of g2-standard-8" in notes[0]


def test_the_quota_id_wording_is_a_quota_error_not_a_rate_limit(services) -> None:
    """'The following quotas are exceeded: CustomModelTraining...' comes as RESOURCE_EXHAUSTED (HTTP 429)."""
    jobs, _ = services
    wording = f"The following quotas are exceeded: {T4}"
    jobs.fail("CreateCustomJob", grpc.StatusCode.RESOURCE_EXHAUSTED, message=wording)
    with pytest.raises(JobError) as raised:
        create()
    assert jobs.methods().count("CreateCustomJob") == 1  # no retry storm
    message = str(raised.value)
    assert f"hit a quota in project {PROJECT}, region {REGION}: {T4}" in message
    assert "rate limited" not in message
