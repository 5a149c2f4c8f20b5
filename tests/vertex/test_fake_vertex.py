"""The fake JobService itself: the list-filter subset and the cancel/delete rules other tests rely on."""

import os

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from tests.fakes.vertex import FakeJobService

JobState = aiplatform_v1.JobState
PARENT = "projects/p/locations/us-central1"


@pytest.fixture
def client(fake_vertex):
    channel = grpc.insecure_channel(os.environ["VERTEX_AI_EMULATOR_HOST"])
    return aiplatform_v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))


def labelled(project: str, stack: str) -> aiplatform_v1.CustomJob:
    return aiplatform_v1.CustomJob(
        display_name=f"{project}-{stack}", labels={"pulumi_project": project, "pulumi_stack": stack}
    )


def names(client, filter_: str) -> set[str]:
    request = aiplatform_v1.ListCustomJobsRequest(parent=PARENT, filter=filter_, page_size=1)
    return {job.name for job in client.list_custom_jobs(request=request)}


def test_list_filter_subset(fake_vertex: FakeJobService, client):
    running = fake_vertex.add_job(PARENT, labelled("vertex-training", "dev"))
    pending = fake_vertex.add_job(PARENT, labelled("vertex-training", "dev"), JobState.JOB_STATE_PENDING)
    done = fake_vertex.add_job(PARENT, labelled("vertex-training", "dev"), JobState.JOB_STATE_SUCCEEDED)
    other_stack = fake_vertex.add_job(PARENT, labelled("vertex-training", "prod"))
    fake_vertex.add_job("projects/p/locations/europe-west4", labelled("vertex-training", "dev"))
    stack = 'labels.pulumi_project="vertex-training" AND labels.pulumi_stack="dev"'
    live = '(state="JOB_STATE_RUNNING" OR state="JOB_STATE_PENDING" OR state="JOB_STATE_QUEUED")'
    assert names(client, stack) == {running, pending, done}
    assert names(client, f"{stack} AND {live}") == {running, pending}
    assert names(client, f'{stack} AND NOT state="JOB_STATE_SUCCEEDED"') == {running, pending}
    assert names(client, 'labels.pulumi_stack!="dev"') == {other_stack}
    assert names(client, "") == {running, pending, done, other_stack}
    with pytest.raises(gexc.InvalidArgument):
        names(client, "create_time>2020")


def test_cancel_then_delete_rules(fake_vertex: FakeJobService, client):
    name = fake_vertex.add_job(PARENT, labelled("vertex-training", "dev"))
    with pytest.raises(gexc.FailedPrecondition):
        client.delete_custom_job(name=name)  # a live job must be cancelled first
    client.cancel_custom_job(name=name)
    assert fake_vertex.jobs[name].state == JobState.JOB_STATE_CANCELLING
    assert client.get_custom_job(name=name).state == JobState.JOB_STATE_CANCELLED
    with pytest.raises(gexc.FailedPrecondition):
        client.cancel_custom_job(name=name)
    client.delete_custom_job(name=name).result(timeout=10)
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=name)
    assert fake_vertex.methods()[-1] == "GetCustomJob"


def test_set_state_records_error_and_times(fake_vertex: FakeJobService, client):
    name = fake_vertex.add_job(PARENT, labelled("vertex-training", "dev"), JobState.JOB_STATE_QUEUED)
    fake_vertex.set_state(name, JobState.JOB_STATE_FAILED, "out of memory")
    job = client.get_custom_job(name=name)
    assert (job.state, job.error.message) == (JobState.JOB_STATE_FAILED, "out of memory")
    assert job.end_time and job.create_time


@pytest.mark.parametrize(
    ("instances_format", "config", "words"),
    [
        ("file-list", {"key_field": "key"}, "key_field is not supported"),
        ("csv", {"excluded_fields": ["b"]}, "not supported"),
        ("jsonl", {"included_fields": ["a"], "excluded_fields": ["b"]}, "only one of"),
        ("file-list", {"instance_type": "object"}, "does not apply"),
    ],
)
def test_batch_instance_config_follows_the_proto(
    fake_vertex: FakeJobService, client, instances_format, config, words
):
    """InstanceConfig's rules (batch_prediction_job.proto): a request the service would refuse is refused."""
    job = aiplatform_v1.BatchPredictionJob(
        display_name="b",
        model="projects/p/locations/us-central1/models/m",
        input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
            instances_format=instances_format, gcs_source=aiplatform_v1.GcsSource(uris=["gs://b/in"])
        ),
        instance_config=aiplatform_v1.BatchPredictionJob.InstanceConfig(**config),
        output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
            predictions_format="jsonl",
            gcs_destination=aiplatform_v1.GcsDestination(output_uri_prefix="gs://b/o"),
        ),
        dedicated_resources=aiplatform_v1.BatchDedicatedResources(
            machine_spec=aiplatform_v1.MachineSpec(machine_type="n1-standard-4"), starting_replica_count=1
        ),
    )
    with pytest.raises(gexc.InvalidArgument, match=words):
        client.create_batch_prediction_job(
            parent="projects/p/locations/us-central1", batch_prediction_job=job
        )
