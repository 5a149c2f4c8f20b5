"""CustomJobProvider against a fake Vertex JobService, through the real JobServiceClient."""

import datetime
import threading

import google.auth
import grpc
import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import waiting
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError, with_retry
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.vertex import VertexRunner
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props, placed, pool

JobState = aiplatform_v1.JobState
PARENT = f"projects/{PROJECT}/locations/{REGION}"
QUOTA = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"


@pytest.fixture
def provider() -> CustomJobProvider:
    return CustomJobProvider()


def create(provider, **overrides):
    props = provider.check({}, job_props(**overrides)).inputs
    return provider.create(props)


def seed(fake, state, **overrides):
    """A job already on the server with the key these props would give it."""
    job = custom_job_request(spec.with_defaults(job_props(**overrides)))
    return fake.add_job(PARENT, job, state)


def test_create_waits_to_success_and_reports_states(fake_vertex, provider, capsys):
    result = create(provider)
    assert result.id.startswith(f"{PARENT}/customJobs/")
    outs = result.outs
    assert outs["job_name"] == result.id
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    # As the pinned google-cloud-aiplatform (2.7.0, jobs.py _dashboard_uri) builds it.
    job_id = result.id.rsplit("/", 1)[-1]
    assert outs["console_url"] == (
        f"https://console.cloud.google.com/agent-platform/locations/{REGION}/training/{job_id}?project={PROJECT}"
    )
    assert outs["model_dir"] == "gs://demo-bucket/runs/1/model/"
    assert outs["create_time"] and outs["start_time"] and outs["end_time"] and outs["error"] == ""
    assert outs["worker_pools"][0]["machine_type"] == "n1-standard-8"  # inputs are kept for delete/read
    (job,) = fake_vertex.jobs.values()
    assert job.labels[KEY_LABEL] == spec.job_key(spec.with_defaults(job_props()))
    sent = next(req for method, req in fake_vertex.calls if method == "CreateCustomJob")
    assert sent.parent == PARENT
    err = capsys.readouterr().err
    for state in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"):
        assert state in err


def test_create_without_wait_returns_at_once(fake_vertex, provider):
    outs = create(provider, wait=False).outs
    assert outs["state"] == "JOB_STATE_QUEUED"
    assert fake_vertex.methods() == ["ListCustomJobs", "CreateCustomJob"]


def test_failed_job_raises_with_name_error_and_link(fake_vertex, provider):
    fake_vertex.outcome = JobState.JOB_STATE_FAILED
    fake_vertex.outcome_error = "The replica workerpool0-0 exited with a non-zero status of 1: OOM"
    with pytest.raises(JobError) as raised:
        create(provider)
    (name,) = fake_vertex.jobs
    message = str(raised.value)
    assert name in message
    assert "JOB_STATE_FAILED" in message
    assert "exited with a non-zero status of 1: OOM" in message
    assert f"training/{name.rsplit('/', 1)[-1]}?project={PROJECT}" in message
    assert "(error code 13 INTERNAL)" in message
    assert "quota" not in message  # no capacity hint for an ordinary failure
    assert "Traceback" not in message and "\n" not in message


@pytest.mark.parametrize(
    ("error", "spot"),
    [
        ("The following quota metrics exceed quota limits: " + QUOTA, False),
        ("Resources are insufficient in region: us-central1. Please try a different region.", False),
        ("Job failed: ZONE_RESOURCE_POOL_EXHAUSTED (stockout) for Spot VMs", True),
    ],
)
def test_job_failing_for_quota_or_capacity_gets_a_hint_and_keeps_its_code(fake_vertex, provider, error, spot):
    fake_vertex.outcome = JobState.JOB_STATE_FAILED
    fake_vertex.outcome_error = error
    fake_vertex.outcome_error_code = 8
    with pytest.raises(JobError) as raised:
        # max_restarts 0: capacity losses are not submitted again, so the first failure is the answer.
        create(provider, spot=spot, max_restarts=0)
    message = str(raised.value)
    assert error in message and "(error code 8 RESOURCE_EXHAUSTED)" in message
    assert (
        f"iam-admin/quotas?project={PROJECT}" in message
        and "other regions (stack config key fallbackRegions)" in message
    )
    assert ("set spot: false" in message) == spot
    (job,) = fake_vertex.jobs.values()
    assert (
        provider.read(job.name, {**job_props(), "job_name": job.name})
        .outs["error"]
        .endswith("(error code 8 RESOURCE_EXHAUSTED)")
    )


def test_rate_limit_is_retried(fake_vertex, provider):
    fake_vertex.fail(
        "CreateCustomJob",
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        times=2,
        message="Quota exceeded for quota metric 'Resource management requests' and limit 'per minute'",
    )
    assert create(provider).outs["state"] == "JOB_STATE_SUCCEEDED"
    assert fake_vertex.methods().count("CreateCustomJob") == 2 + 1


def test_persistent_rate_limit_ends_with_quota_advice(fake_vertex, provider, monkeypatch):
    monkeypatch.setattr("infra.dynamic.retries.RETRY_ATTEMPTS", 3)
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.RESOURCE_EXHAUSTED, times=3, message="rate limited")
    with pytest.raises(JobError) as raised:
        create(provider)
    message = str(raised.value)
    assert "rate limited 3 times" in message and "request quota" in message
    assert f"iam-admin/quotas?project={PROJECT}" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # no chained traceback
    assert fake_vertex.methods() == ["ListCustomJobs"] * 3


def test_delete_operation_that_does_not_finish_is_an_actionable_error(fake_vertex, provider, monkeypatch):
    outs = create(provider).outs

    def never_done(self, timeout=None, **_):
        raise TimeoutError("Operation did not complete within the designated timeout.")

    monkeypatch.setattr("google.api_core.operation.Operation.result", never_done)
    with pytest.raises(JobError) as raised:
        provider.delete(outs["job_name"], outs)
    message = str(raised.value)
    assert outs["job_name"] in message and "had not finished after 300s" in message
    assert "pulumi refresh" in message and outs["console_url"] in message


def test_boot_disk_type_is_left_to_vertex_unless_configured(fake_vertex, provider):
    create(provider, worker_pools=[pool(), pool(boot_disk_type="hyperdisk-balanced", replica_count=2)])
    (job,) = fake_vertex.jobs.values()
    disks = [p.disk_spec for p in job.job_spec.worker_pool_specs]
    assert [d.boot_disk_type for d in disks] == ["", "hyperdisk-balanced"]
    assert [d.boot_disk_size_gb for d in disks] == [100, 100]


def test_quota_error_names_the_quota_and_the_ways_out(fake_vertex, provider):
    fake_vertex.fail(
        "CreateCustomJob",
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        message=f"The following quota metrics exceed quota limits: {QUOTA}",
    )
    with pytest.raises(JobError) as raised:
        create(provider)
    message = str(raised.value)
    assert QUOTA in message
    assert "Spot" in message and "fallbackRegions" in message and "smaller machine" in message
    assert fake_vertex.jobs == {}
    assert fake_vertex.methods().count("CreateCustomJob") == 1  # permanent: not retried


def test_permission_denied_names_the_role(fake_vertex, provider):
    fake_vertex.fail(
        "ListCustomJobs", grpc.StatusCode.PERMISSION_DENIED, message="aiplatform.customJobs.list denied"
    )
    with pytest.raises(JobError, match=r"roles/aiplatform\.user"):
        create(provider)
    assert fake_vertex.methods() == ["ListCustomJobs"]


def test_transient_errors_are_retried(fake_vertex, provider):
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.DEADLINE_EXCEEDED, times=2)
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, times=1)
    fake_vertex.fail("GetCustomJob", grpc.StatusCode.UNAVAILABLE, times=3)
    outs = create(provider).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert len(fake_vertex.jobs) == 1
    # Two failed lists, the adoption check, and a look before resubmitting the failed create.
    assert fake_vertex.methods().count("ListCustomJobs") == 4
    assert fake_vertex.methods().count("CreateCustomJob") == 2


def test_hung_call_hits_its_deadline_and_is_retried(fake_vertex, provider, monkeypatch, capsys):
    monkeypatch.setattr("infra.vertex.runners.vertex.CALL_TIMEOUT_SECONDS", 0.3)
    fake_vertex.slow("GetCustomJob", 2.0)
    outs = create(provider).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    # Without a deadline the call would just wait out the hang; with one it is abandoned and asked again.
    assert "DEADLINE_EXCEEDED, retrying" in capsys.readouterr().err


def test_transient_errors_give_up_eventually(fake_vertex, provider, monkeypatch):
    monkeypatch.setattr("infra.dynamic.retries.RETRY_ATTEMPTS", 3)
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.UNAVAILABLE, times=5)
    with pytest.raises(JobError, match="failed 3 times with a transient error"):
        create(provider)


def test_lost_create_response_does_not_duplicate_the_job(fake_vertex, provider):
    fake_vertex.fail("CreateCustomJob", grpc.StatusCode.UNAVAILABLE, applied=True)
    outs = create(provider).outs
    assert len(fake_vertex.jobs) == 1
    assert outs["job_name"] in fake_vertex.jobs
    assert fake_vertex.methods().count("CreateCustomJob") == 1


def test_create_interrupted_after_submission_adopts_the_same_job(fake_vertex, provider):
    fake_vertex.fail("GetCustomJob", grpc.StatusCode.INTERNAL, message="connection reset by peer")
    with pytest.raises(JobError):
        create(provider)
    (first,) = fake_vertex.jobs
    outs = create(provider).outs  # the next `pulumi up`
    assert outs["job_name"] == first
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert len(fake_vertex.jobs) == 1
    assert fake_vertex.methods().count("CreateCustomJob") == 1


def test_succeeded_job_with_same_key_is_adopted(fake_vertex, provider):
    name = seed(fake_vertex, JobState.JOB_STATE_SUCCEEDED)
    seed(fake_vertex, JobState.JOB_STATE_SUCCEEDED, display_name="other-job")
    outs = create(provider).outs
    assert outs["job_name"] == name
    assert "CreateCustomJob" not in fake_vertex.methods()


def test_failed_or_cancelled_job_with_same_key_is_not_adopted(fake_vertex, provider):
    failed = seed(fake_vertex, JobState.JOB_STATE_FAILED)
    cancelled = seed(fake_vertex, JobState.JOB_STATE_CANCELLED)
    outs = create(provider).outs
    assert outs["job_name"] not in (failed, cancelled)
    assert len(fake_vertex.jobs) == 3


def test_job_past_its_timeout_is_cancelled_then_raises(fake_vertex, provider, monkeypatch):
    monkeypatch.setattr(waiting, "DEADLINE_GRACE_SECONDS", 0.0)
    fake_vertex.auto_advance = False
    name = seed(fake_vertex, JobState.JOB_STATE_RUNNING, timeout_seconds=1, poll_interval_seconds=0.2)
    with pytest.raises(JobError, match="ran past timeout_seconds=1") as raised:
        create(provider, timeout_seconds=1, poll_interval_seconds=0.2)
    assert "CancelCustomJob" in fake_vertex.methods()
    assert fake_vertex.jobs[name].state == JobState.JOB_STATE_CANCELLED
    assert "JOB_STATE_CANCELLED" in str(raised.value)


def test_running_deadline_starts_when_the_job_starts_not_when_it_was_queued(fake_vertex, provider):
    # Failure 5: a job queued longer than its timeout (waiting for Spot capacity) is not "past its timeout".
    fake_vertex.auto_advance = False
    name = seed(fake_vertex, JobState.JOB_STATE_QUEUED, timeout_seconds=1)
    fake_vertex.jobs[name].create_time = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=2)
    finished = threading.Timer(1.5, fake_vertex.set_state, (name, JobState.JOB_STATE_SUCCEEDED))
    threading.Timer(0.3, fake_vertex.set_state, (name, JobState.JOB_STATE_RUNNING)).start()
    finished.start()
    outs = create(provider, timeout_seconds=1, poll_interval_seconds=0.1, queue_timeout_seconds=36000).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert "CancelCustomJob" not in fake_vertex.methods()


def test_job_that_never_starts_is_cancelled_after_the_queue_timeout(fake_vertex, provider):
    fake_vertex.auto_advance = False
    name = seed(fake_vertex, JobState.JOB_STATE_QUEUED, spot=True)
    with pytest.raises(JobError) as raised:
        create(provider, spot=True, queue_timeout_seconds=1, poll_interval_seconds=0.1)
    assert fake_vertex.jobs[name].state == JobState.JOB_STATE_CANCELLED
    message = str(raised.value)
    assert "did not start within queue_timeout_seconds=1" in message
    assert "no free quota for 1 x n1-standard-8 + 1 x NVIDIA_TESLA_T4" in message
    assert f"project {PROJECT}, region {REGION}" in message and "no Spot VM capacity" in message
    assert "queueTimeoutSeconds" in message and "set spot: false" in message
    assert "\n" not in message


def test_paused_job_that_resumes_is_held_to_its_running_deadline(fake_vertex, provider, monkeypatch):
    monkeypatch.setattr(waiting, "DEADLINE_GRACE_SECONDS", 0.0)
    monkeypatch.setattr(waiting, "DEADLINE_RECHECK_SECONDS", 0.2)
    fake_vertex.auto_advance = False
    name = seed(fake_vertex, JobState.JOB_STATE_PAUSED, timeout_seconds=1)
    fake_vertex.jobs[name].start_time = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    threading.Timer(0.5, fake_vertex.set_state, (name, JobState.JOB_STATE_RUNNING)).start()
    with pytest.raises(JobError, match="ran past timeout_seconds=1"):
        create(provider, timeout_seconds=1, poll_interval_seconds=0.1)
    assert fake_vertex.jobs[name].state == JobState.JOB_STATE_CANCELLED


def test_paused_job_is_not_held_to_a_deadline(provider):
    paused = JobStatus(
        "job", "JOB_STATE_PAUSED", "url", create_time="2020-01-01T00:00:00+00:00", start_time=""
    )
    assert waiting.deadline(CUSTOM_JOB, paused, placed(job_props())) == float("inf")


def test_delete_of_running_job_cancels_waits_then_deletes(fake_vertex, provider):
    fake_vertex.auto_advance = False
    outs = create(provider, wait=False).outs
    fake_vertex.set_state(outs["job_name"], JobState.JOB_STATE_RUNNING)
    fake_vertex.calls.clear()
    provider.delete(outs["job_name"], outs)
    assert fake_vertex.jobs == {}
    methods = fake_vertex.methods()
    assert methods.index("CancelCustomJob") < methods.index("DeleteCustomJob")
    # Deleted only after a Get saw the cancellation finish.
    assert methods[methods.index("DeleteCustomJob") - 1] == "GetCustomJob"


def test_delete_of_job_deleted_while_cancelling_succeeds(fake_vertex, provider, monkeypatch):
    fake_vertex.auto_advance = False
    outs = create(provider, wait=False).outs
    fake_vertex.set_state(outs["job_name"], JobState.JOB_STATE_RUNNING)
    cancel = VertexRunner.cancel

    def cancel_then_vanish(self, name):
        cancel(self, name)
        del fake_vertex.jobs[name]  # the kill switch (or the console) deletes it meanwhile

    monkeypatch.setattr(VertexRunner, "cancel", cancel_then_vanish)
    provider.delete(outs["job_name"], outs)  # NotFound counts as done
    assert fake_vertex.jobs == {}
    assert "DeleteCustomJob" not in fake_vertex.methods()


def test_delete_of_finished_job_deletes_without_cancel(fake_vertex, provider):
    outs = create(provider).outs
    fake_vertex.calls.clear()
    provider.delete(outs["job_name"], outs)
    assert fake_vertex.methods() == ["GetCustomJob", "DeleteCustomJob"]
    assert fake_vertex.jobs == {}


def test_delete_of_deleted_job_succeeds(fake_vertex, provider):
    outs = create(provider).outs
    provider.delete(outs["job_name"], outs)
    provider.delete(outs["job_name"], outs)  # NotFound counts as done
    name = seed(fake_vertex, JobState.JOB_STATE_SUCCEEDED)
    fake_vertex.fail("DeleteCustomJob", grpc.StatusCode.NOT_FOUND)  # deleted by someone else meanwhile
    provider.delete(name, {**outs, "job_name": name})


def test_read_refreshes_and_reads_vanished_job_as_gone(fake_vertex, provider):
    outs = create(provider, wait=False).outs
    read = provider.read(outs["job_name"], outs)
    assert read.id == outs["job_name"]
    assert read.outs["state"] == "JOB_STATE_PENDING"
    assert read.outs["worker_pools"] == outs["worker_pools"]
    fake_vertex.jobs.clear()
    gone = provider.read(outs["job_name"], outs)
    assert (gone.id, gone.outs) == ("", {})


def test_update_changes_wait_in_place_and_returns_full_outputs(fake_vertex, provider):
    outs = create(provider, wait=False).outs
    news = provider.check(outs, job_props(wait=True, poll_interval_seconds=0.02)).inputs
    updated = provider.update(outs["job_name"], outs, news).outs
    assert updated["job_name"] == outs["job_name"]
    assert updated["state"] == "JOB_STATE_SUCCEEDED"
    assert updated["poll_interval_seconds"] == 0.02
    assert len(fake_vertex.jobs) == 1


def test_vertex_runner_uses_the_regional_endpoint_without_emulator(monkeypatch):
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), PROJECT))
    client = VertexRunner(PROJECT, "europe-west4").client
    assert client.transport._host == "europe-west4-aiplatform.googleapis.com:443"


# --- diff -----------------------------------------------------------------------------------------------
def stored_outputs(provider, **overrides):
    """What state holds after create: checked inputs, computed outputs and the serialized provider."""
    props = provider.check({}, job_props(**overrides)).inputs
    return {
        **props,
        "job_name": f"{PARENT}/customJobs/1",
        "state": "JOB_STATE_SUCCEEDED",
        "__provider": "old",
    }


def news(provider, **overrides):
    return {**provider.check({}, job_props(**overrides)).inputs, "__provider": "new"}


def test_diff_nothing_relevant_changed_is_an_explicit_no_change(provider):
    result = provider.diff("id", stored_outputs(provider), news(provider))
    assert result.changes is False
    assert not result.replaces


@pytest.mark.parametrize(
    ("overrides", "replaces"),
    [
        ({"worker_pools": [pool(image_uri="us-docker.pkg.dev/p/r/t@sha256:" + "b" * 64)]}, ["worker_pools"]),
        ({"worker_pools": [pool(args=["--epochs", "3"])]}, ["worker_pools"]),
        ({"worker_pools": [pool(env={"A": "1"})]}, ["worker_pools"]),
        ({"service_account": "other@demo-project.iam.gserviceaccount.com"}, ["service_account"]),
        ({"base_output_dir": "gs://demo-bucket/runs/2"}, ["base_output_dir"]),
        ({"spot": True, "timeout_seconds": 60}, ["timeout_seconds", "spot", "scheduling_strategy"]),
        ({"region": "europe-west4"}, ["region"]),
        ({"labels": {"team": "ml"}}, ["labels"]),
        ({"runner": "local"}, ["runner"]),
    ],
)
def test_diff_replaces_on_what_the_job_computes(provider, overrides, replaces):
    result = provider.diff("id", stored_outputs(provider), news(provider, **overrides))
    assert result.changes is True
    assert result.replaces == replaces
    assert result.delete_before_replace is True


def test_diff_wait_and_poll_interval_change_in_place(provider):
    result = provider.diff(
        "id", stored_outputs(provider), news(provider, wait=False, poll_interval_seconds=5)
    )
    assert result.changes is True
    assert not result.replaces


def test_diff_unknown_preview_input_is_a_replacement(provider):
    new = news(provider, worker_pools=[pool(image_uri=UNKNOWN)])
    result = provider.diff("id", stored_outputs(provider), new)
    assert result.replaces == ["worker_pools"]


@pytest.mark.parametrize("unknown", [Unknown(), UNKNOWN], ids=["Unknown object", "sentinel string"])
def test_diff_replaces_only_for_unknown_inputs_that_replace(provider, unknown):
    olds = provider.check({}, job_props()).inputs
    image = provider.diff("id", olds, job_props(worker_pools=[pool(image_uri=unknown)]))
    assert (image.changes, image.replaces) == (True, ["worker_pools"])
    args = provider.diff("id", olds, job_props(worker_pools=[pool(args=["--x", unknown])]))
    assert args.replaces == ["worker_pools"]
    for in_place in ("wait", "poll_interval_seconds", "queue_timeout_seconds"):
        diff = provider.diff("id", olds, job_props(**{in_place: unknown}))
        assert (diff.changes, diff.replaces) == (True, []), in_place


def test_http_429_is_retried_like_a_rate_limit(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda _s: None)
    calls = []

    def call():
        calls.append(1)
        if len(calls) < 3:
            raise gexc.TooManyRequests("Too many requests")
        return "ok"

    assert with_retry(call, "Listing", 0.01) == "ok" and len(calls) == 3


def test_diff_treats_pulumi_doubles_as_the_same_numbers(provider):
    old = stored_outputs(provider)
    new = {**news(provider), "timeout_seconds": 3600.0}
    assert provider.diff("id", old, new).changes is False


def test_check_fills_defaults_and_reports_failures(provider):
    raw = job_props(worker_pools=[pool(replica_count=2)])
    del raw["wait"]
    result = provider.check({}, raw)
    assert result.inputs["wait"] is True
    assert [f.property for f in result.failures] == ["worker_pools[0].replica_count"]
