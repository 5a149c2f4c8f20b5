"""The kill-switch function against the fake Vertex JobService and EndpointService, invoked through its real
entry point."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from typing import Any

import google.auth
import grpc
import pytest
from cloudevents.http import CloudEvent
from functions_framework import create_app
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1

from infra.guard import main
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.vertex import FakeJobService
from tests.fakes.vertex_jobs import FakeVertexJobs
from tests.fakes.vertex_tuning import FakeTuningJobService

JobState = aiplatform_v1.JobState
PROJECT, REGION = "test-project", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
OTHER_REGION = f"projects/{PROJECT}/locations/europe-west4"
ENV = {
    main.ENV_PROJECT: PROJECT,
    main.ENV_REGION: REGION,
    main.ENV_PULUMI_PROJECT: "vertex-training",
    main.ENV_PULUMI_STACK: "dev",
    main.ENV_THRESHOLD: "1.0",
}
ATTRIBUTES = {"billingAccountId": "01D4EE-079462-DFD6EC", "budgetId": "de72f49d", "schemaVersion": "1.0"}


@pytest.fixture
def fake_endpoints() -> FakeEndpointService:
    """The fake EndpointService, served beside the jobs (no endpoint unless a test adds one); Vertex ends an
    undeploy on its own (the function does not wait for it): here at once."""
    endpoints = FakeEndpointService()
    endpoints.operation_polls = 0
    return endpoints


@pytest.fixture
def fake_vertex(
    monkeypatch: pytest.MonkeyPatch, fake_endpoints: FakeEndpointService
) -> Iterator[FakeTuningJobService]:
    """The fake JobService with every job kind: the guard lists and cancels each."""
    server = FakeVertexJobs()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", server.start(*fake_endpoints.handlers()))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def guard_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def budget(cost: float, amount: float = 100.0, **extra: Any) -> dict[str, Any]:
    """A notification shaped like Cloud Billing's (schemaVersion 1.0)."""
    return {
        "budgetDisplayName": "vertex-training-dev",
        "costAmount": cost,
        "costIntervalStart": "2026-05-01T07:00:00Z",
        "budgetAmount": amount,
        "budgetAmountType": "SPECIFIED_AMOUNT",
        "currencyCode": "USD",
        **extra,
    }


def pubsub_data(data: bytes | None) -> dict[str, Any]:
    message: dict[str, Any] = {"attributes": ATTRIBUTES, "messageId": "136969346945"}
    if data is not None:
        message["data"] = base64.b64encode(data).decode()
    message["publishTime"] = "2026-05-20T12:00:00Z"
    return {"message": message, "subscription": "projects/test-project/subscriptions/eventarc-sub"}


def event(data: dict[str, Any]) -> CloudEvent:
    return CloudEvent(
        {"type": "google.cloud.pubsub.topic.v1.messagePublished", "source": "//pubsub.googleapis.com/t"},
        data,
    )


def notify(payload: dict[str, Any]) -> None:
    main.on_budget_notification(event(pubsub_data(json.dumps(payload).encode())))


def seed(fake: FakeJobService, stack: str, state: JobState, parent: str = PARENT, project: str = "") -> str:
    labels = {"managed-by": "pulumi", "pulumi_project": project or "vertex-training", "pulumi_stack": stack}
    return fake.add_job(parent, aiplatform_v1.CustomJob(display_name=f"{stack}-job", labels=labels), state)


def cancelled(fake: FakeJobService) -> list[str]:
    return [req.name for method, req in fake.calls if method == "CancelCustomJob"]


def logs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.fixture
def jobs(fake_vertex: FakeJobService) -> dict[str, str]:
    return {
        "running": seed(fake_vertex, "dev", JobState.JOB_STATE_RUNNING),
        "queued": seed(fake_vertex, "dev", JobState.JOB_STATE_QUEUED),
        "pending": seed(fake_vertex, "dev", JobState.JOB_STATE_PENDING),
        "other_stack": seed(fake_vertex, "prod", JobState.JOB_STATE_RUNNING),
        "other_project": seed(fake_vertex, "dev", JobState.JOB_STATE_RUNNING, project="someone-else"),
        "other_region": seed(fake_vertex, "dev", JobState.JOB_STATE_RUNNING, OTHER_REGION),
        "succeeded": seed(fake_vertex, "dev", JobState.JOB_STATE_SUCCEEDED),
    }


def test_over_budget_cancels_exactly_this_stacks_live_jobs(
    fake_vertex: FakeJobService, jobs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    notify(budget(cost=100.01))

    ours = {jobs["running"], jobs["queued"], jobs["pending"]}
    assert sorted(cancelled(fake_vertex)) == sorted(ours)
    assert all(fake_vertex.jobs[name].state == JobState.JOB_STATE_CANCELLING for name in ours)
    assert fake_vertex.jobs[jobs["other_stack"]].state == JobState.JOB_STATE_RUNNING
    assert fake_vertex.jobs[jobs["other_project"]].state == JobState.JOB_STATE_RUNNING
    assert fake_vertex.jobs[jobs["other_region"]].state == JobState.JOB_STATE_RUNNING
    assert fake_vertex.jobs[jobs["succeeded"]].state == JobState.JOB_STATE_SUCCEEDED
    # One list in the stack's region, filtered server-side on this stack's labels and live states.
    (list_request,) = [req for method, req in fake_vertex.calls if method == "ListCustomJobs"]
    assert list_request.parent == PARENT
    assert 'labels.pulumi_stack="dev"' in list_request.filter
    assert 'labels.pulumi_project="vertex-training"' in list_request.filter
    records = logs(capsys)
    assert sorted(r["job"] for r in records if r["message"] == "cancelled job") == sorted(ours)
    assert all(r["severity"] == "NOTICE" for r in records if r["message"] == "cancelled job")
    (summary,) = [r for r in records if r["message"] == "kill switch done"]
    assert (summary["cancelled"], summary["cost"], summary["budget"]) == (3, 100.01, 100.0)


def seed_study(fake: FakeTuningJobService, stack: str, state: JobState) -> str:
    labels = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": stack}
    study = aiplatform_v1.HyperparameterTuningJob(display_name=f"{stack}-tune", labels=labels)
    return fake.add_study(PARENT, study, state)


def test_over_budget_cancels_this_stacks_live_studies_first(
    fake_vertex: FakeTuningJobService, jobs: dict[str, str]
) -> None:
    """A study's trials carry no labels (CustomJobSpec has none): the study itself must be cancelled, before
    it starts its next trial."""
    live = seed_study(fake_vertex, "dev", JobState.JOB_STATE_RUNNING)
    other = seed_study(fake_vertex, "prod", JobState.JOB_STATE_RUNNING)
    done = seed_study(fake_vertex, "dev", JobState.JOB_STATE_SUCCEEDED)
    notify(budget(cost=100.0))
    assert fake_vertex.tuning_jobs[live].state == JobState.JOB_STATE_CANCELLING
    assert fake_vertex.tuning_jobs[other].state == JobState.JOB_STATE_RUNNING
    assert fake_vertex.tuning_jobs[done].state == JobState.JOB_STATE_SUCCEEDED
    methods = [method for method, _ in fake_vertex.calls]
    assert methods[:2] == ["ListHyperparameterTuningJobs", "CancelHyperparameterTuningJob"]
    (study_list,) = [req for method, req in fake_vertex.calls if method == "ListHyperparameterTuningJobs"]
    assert study_list.filter == main.job_filter("vertex-training", "dev") and study_list.parent == PARENT
    assert len(cancelled(fake_vertex)) == 3  # and the stack's CustomJobs, as before


def test_over_budget_cancels_this_stacks_live_batch_predictions(
    fake_vertex: FakeVertexJobs, jobs: dict[str, str]
) -> None:
    """Every kind of the one table (infra/guard/job_kinds.py) is listed and cancelled, batches too."""
    labels = {"managed-by": "pulumi", "pulumi_project": "vertex-training"}
    live = fake_vertex.add_job(
        PARENT,
        aiplatform_v1.BatchPredictionJob(display_name="dev-batch", labels={**labels, "pulumi_stack": "dev"}),
    )
    other = fake_vertex.add_job(
        PARENT,
        aiplatform_v1.BatchPredictionJob(display_name="prod", labels={**labels, "pulumi_stack": "prod"}),
    )
    notify(budget(cost=100.0))
    assert fake_vertex.jobs[live].state == JobState.JOB_STATE_CANCELLING
    assert fake_vertex.jobs[other].state == JobState.JOB_STATE_RUNNING
    methods = [method for method, _ in fake_vertex.calls]
    # Studies, then custom jobs, then batch predictions: each kind's jobs cancelled before the next is listed.
    assert methods.index("ListBatchPredictionJobs") > methods.index("CancelCustomJob")
    assert [req.name for m, req in fake_vertex.calls if m == "CancelBatchPredictionJob"] == [live]


def test_under_budget_does_nothing(fake_vertex: FakeJobService, jobs: dict[str, str]) -> None:
    # Forecast over the budget is not spend: the job may still finish under it.
    notify(budget(cost=99.99, alertThresholdExceeded=0.9, forecastThresholdExceeded=1.2))
    assert fake_vertex.calls == []
    assert fake_vertex.jobs[jobs["running"]].state == JobState.JOB_STATE_RUNNING


def test_threshold_from_environment(
    fake_vertex: FakeJobService, jobs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(main.ENV_THRESHOLD, "0.8")
    notify(budget(cost=79.0))
    assert cancelled(fake_vertex) == []
    notify(budget(cost=80.0))
    assert len(cancelled(fake_vertex)) == 3


def test_repeated_notification_is_harmless(fake_vertex: FakeJobService, jobs: dict[str, str]) -> None:
    notify(budget(cost=150.0))
    first = cancelled(fake_vertex)
    notify(budget(cost=150.0))  # jobs are CANCELLING now: not live, not listed
    assert cancelled(fake_vertex) == first
    for name in first:
        fake_vertex.set_state(name, JobState.JOB_STATE_CANCELLED)
    notify(budget(cost=160.0))
    assert cancelled(fake_vertex) == first
    assert [m for m, _ in fake_vertex.calls].count("ListCustomJobs") == 3


def test_job_that_stops_between_list_and_cancel_is_fine(
    fake_vertex: FakeJobService, jobs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    fake_vertex.fail("CancelCustomJob", grpc.StatusCode.FAILED_PRECONDITION, message="already cancelling")
    notify(budget(cost=120.0))  # returns normally: nothing left to retry
    assert len(cancelled(fake_vertex)) == 3
    assert [r["message"] for r in logs(capsys)].count("job already stopping") == 1


def test_failed_cancel_cancels_the_rest_then_raises_for_redelivery(
    fake_vertex: FakeJobService, jobs: dict[str, str]
) -> None:
    fake_vertex.fail("CancelCustomJob", grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(main.CancelFailed, match="Pub/Sub will redeliver"):
        notify(budget(cost=120.0))
    live = [jobs["running"], jobs["queued"], jobs["pending"]]
    assert [fake_vertex.jobs[n].state for n in live].count(JobState.JOB_STATE_CANCELLING) == 2
    notify(budget(cost=120.0))  # the redelivery finishes the job
    assert all(fake_vertex.jobs[n].state == JobState.JOB_STATE_CANCELLING for n in live)


def test_a_custom_job_list_failure_still_cancels_studies_then_raises_for_redelivery(
    fake_vertex: FakeTuningJobService, jobs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    study = seed_study(fake_vertex, "dev", JobState.JOB_STATE_RUNNING)
    fake_vertex.fail("ListCustomJobs", grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(main.CancelFailed, match="listing us-central1 list_custom_jobs"):
        notify(budget(cost=120.0))
    assert fake_vertex.tuning_jobs[study].state == JobState.JOB_STATE_CANCELLING
    assert cancelled(fake_vertex) == []
    (incomplete,) = [
        r for r in logs(capsys) if r["message"] == "kill switch incomplete; Pub/Sub will redeliver"
    ]
    assert incomplete["severity"] == "ERROR" and incomplete["unlisted"] == ["us-central1 list_custom_jobs"]
    notify(budget(cost=120.0))  # the redelivery lists again and cancels the jobs
    assert sorted(cancelled(fake_vertex)) == sorted([jobs["running"], jobs["queued"], jobs["pending"]])


@pytest.mark.parametrize("code", [grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED])
def test_a_study_list_failure_still_cancels_the_training_jobs(
    fake_vertex: FakeTuningJobService, jobs: dict[str, str], code: grpc.StatusCode
) -> None:
    """Studies are listed first; a failure there (no permission, an RPC the service does not answer) used to
    stop the function before any training job was cancelled."""
    fake_vertex.fail("ListHyperparameterTuningJobs", code)
    with pytest.raises(main.CancelFailed, match="list_hyperparameter_tuning_jobs"):
        notify(budget(cost=120.0))
    assert sorted(cancelled(fake_vertex)) == sorted([jobs["running"], jobs["queued"], jobs["pending"]])


def test_jobs_in_every_region_of_the_chain_are_cancelled_and_a_region_down_stops_no_other(
    fake_vertex: FakeTuningJobService, jobs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(main.ENV_REGIONS, "us-central1,europe-west4,us-east4")
    moved = seed(fake_vertex, "dev", JobState.JOB_STATE_RUNNING, f"projects/{PROJECT}/locations/us-east4")
    fake_vertex.region_down["europe-west4"] = grpc.StatusCode.UNAVAILABLE
    with pytest.raises(main.CancelFailed, match="europe-west4"):
        notify(budget(cost=120.0))
    ours = [jobs["running"], jobs["queued"], jobs["pending"], moved]
    assert sorted(cancelled(fake_vertex)) == sorted(ours)
    assert fake_vertex.jobs[jobs["other_region"]].state == JobState.JOB_STATE_RUNNING  # europe-west4 was down
    del fake_vertex.region_down["europe-west4"]
    notify(budget(cost=120.0))  # the redelivery reaches it
    assert fake_vertex.jobs[jobs["other_region"]].state == JobState.JOB_STATE_CANCELLING
    parents = {req.parent for method, req in fake_vertex.calls if method == "ListCustomJobs"}
    assert parents == {
        f"projects/{PROJECT}/locations/{r}" for r in ("us-central1", "europe-west4", "us-east4")
    }


def test_a_region_whose_credentials_fail_stops_no_other(
    fake_vertex: FakeTuningJobService, jobs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.auth import exceptions as auth_exceptions

    monkeypatch.setenv(main.ENV_REGIONS, "us-central1,europe-west4")

    def factory(region: str) -> aiplatform_v1.JobServiceClient:
        if region == "europe-west4":  # e.g. a token that cannot be refreshed for that endpoint
            raise auth_exceptions.RefreshError("could not refresh the access token")
        return main.make_client(region)

    data = pubsub_data(json.dumps(budget(cost=120.0)).encode())
    with pytest.raises(main.CancelFailed, match="europe-west4 client"):
        main.handle(data, os.environ, factory)
    assert sorted(cancelled(fake_vertex)) == sorted([jobs["running"], jobs["queued"], jobs["pending"]])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "no data"),
        (None, "no data"),
        (b"not json at all", "not base64 JSON"),
        (b"\xff\xfe\x00binary", "not base64 JSON"),
        (b"[1, 2]", "expected an object"),
        (b"{}", "budgetAmount is None"),
        (json.dumps(budget(cost=500.0, amount=0)).encode(), "positive amount"),
        (json.dumps(budget(cost="500")).encode(), "costAmount is '500'"),
        (json.dumps(budget(cost=True)).encode(), "costAmount is True"),
        (b'{"costAmount": NaN, "budgetAmount": 1}', "costAmount is nan"),
    ],
)
def test_malformed_messages_are_logged_and_acknowledged(
    fake_vertex: FakeJobService,
    jobs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    data: bytes | None,
    reason: str,
) -> None:
    main.on_budget_notification(event(pubsub_data(data)))  # returns: the message is acknowledged
    assert fake_vertex.calls == []
    (record,) = logs(capsys)
    assert (record["severity"], record["message"]) == ("WARNING", "ignored malformed budget notification")
    assert reason in record["error"]


@pytest.mark.parametrize("data", [None, {}, {"message": "text"}, {"message": {"data": "%%%"}}])
def test_events_without_a_pubsub_message_are_acknowledged(fake_vertex: FakeJobService, data: Any) -> None:
    main.on_budget_notification(event(data))
    assert fake_vertex.calls == []


def test_missing_deployment_environment_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(main.ENV_PULUMI_STACK)
    with pytest.raises(main.ConfigError, match="KILL_SWITCH_PULUMI_STACK"):
        notify(budget(cost=1.0))
    monkeypatch.setenv(main.ENV_PULUMI_STACK, "dev")
    monkeypatch.setenv(main.ENV_THRESHOLD, "-1")
    with pytest.raises(main.ConfigError, match="killSwitchThreshold"):
        notify(budget(cost=1.0))


def test_functions_framework_serves_the_entry_point(
    fake_vertex: FakeJobService, jobs: dict[str, str]
) -> None:
    """What Cloud Run runs: the framework loads main.py by path and posts the CloudEvent to it."""
    app = create_app(target="on_budget_notification", source=main.__file__, signature_type="cloudevent")
    client = app.test_client()
    headers = {
        "ce-specversion": "1.0",
        "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
        "ce-source": "//pubsub.googleapis.com/projects/test-project/topics/budget",
        "ce-id": "1",
    }
    ack = client.post("/", headers=headers, json=pubsub_data(b"garbage"))
    assert ack.status_code == 200  # malformed: acknowledged, not redelivered
    over = client.post("/", headers=headers, json=pubsub_data(json.dumps(budget(cost=101.0)).encode()))
    assert over.status_code == 200
    assert len(cancelled(fake_vertex)) == 3


def test_without_emulator_the_client_uses_the_regional_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(main.EMULATOR_ENV, raising=False)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), PROJECT))
    with main.make_client("europe-west4") as client:
        assert client.api_endpoint == "europe-west4-aiplatform.googleapis.com"


@pytest.mark.parametrize(
    ("cost", "amount", "threshold", "over"),
    [(0.3, 3.0, 0.1, True), (0.29, 3.0, 0.1, False), (50.0, 100.0, 0.5, True), (100.0, 100.0, 1.5, False)],
)
def test_threshold_is_a_fraction_of_the_budget(
    cost: float, amount: float, threshold: float, over: bool
) -> None:
    notification = main.parse_notification(pubsub_data(json.dumps(budget(cost, amount)).encode()))
    assert main.over_threshold(notification, threshold) is over


def test_only_labelled_live_jobs_pass_the_second_check() -> None:
    config = main.load_config(ENV)
    labels = {"pulumi_project": "vertex-training", "pulumi_stack": "dev"}

    def job(state: JobState, **override: str) -> aiplatform_v1.CustomJob:
        return aiplatform_v1.CustomJob(labels={**labels, **override}, state=state)

    assert main.is_ours_and_live(job(JobState.JOB_STATE_RUNNING), config)
    assert not main.is_ours_and_live(job(JobState.JOB_STATE_RUNNING, **{"pulumi_stack": "dev2"}), config)
    assert not main.is_ours_and_live(job(JobState.JOB_STATE_CANCELLING), config)
    assert not main.is_ours_and_live(aiplatform_v1.CustomJob(state=JobState.JOB_STATE_RUNNING), config)


STACK_MODEL = f"{PARENT}/models/vertex-training-dev"


def deploy(endpoints: FakeEndpointService, endpoint: str, model: str) -> str:
    return endpoints.deploy_now(endpoint, model)


def test_over_budget_undeploys_the_stacks_models_after_cancelling_its_jobs(
    fake_vertex: FakeJobService,
    fake_endpoints: FakeEndpointService,
    jobs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ours = fake_endpoints.add_endpoint(
        f"{PARENT}/endpoints/1", {"pulumi_project": "vertex-training", "pulumi_stack": "dev"}
    )
    old = deploy(fake_endpoints, ours.name, f"{STACK_MODEL}@1")
    new = deploy(fake_endpoints, ours.name, f"{STACK_MODEL}@2")  # the newest takes all traffic
    # Deployed by hand on an endpoint of its own, beside a model that is not the stack's: only ours goes.
    by_hand = fake_endpoints.add_endpoint(f"{PARENT}/endpoints/2")
    theirs = deploy(fake_endpoints, by_hand.name, f"{PARENT}/models/someone-else@1")
    mine = deploy(
        fake_endpoints, by_hand.name, "projects/123456/locations/us-central1/models/vertex-training-dev@1"
    )
    other_stack = fake_endpoints.add_endpoint(
        f"{PARENT}/endpoints/3", {"pulumi_project": "vertex-training", "pulumi_stack": "prod"}
    )
    kept = deploy(fake_endpoints, other_stack.name, f"{PARENT}/models/vertex-training-prod@1")

    notify(budget(cost=100.01))

    assert fake_endpoints.deployed(ours.name) == {} and fake_endpoints.traffic(ours.name) == {}
    assert list(fake_endpoints.deployed(by_hand.name)) == [theirs]
    assert fake_endpoints.traffic(by_hand.name) == {theirs: 100}  # the hand-deployed one's share moved
    assert list(fake_endpoints.deployed(other_stack.name)) == [kept]
    records = logs(capsys)
    undeployed = [r for r in records if r["message"] == "undeploying model"]
    assert sorted(r["deployed_model_id"] for r in undeployed) == sorted([old, new, mine])
    messages = [r["message"] for r in records]
    assert messages.index("cancelled job") < messages.index("undeploying model")
    (summary,) = [r for r in records if r["message"] == "kill switch done"]
    assert (summary["cancelled"], summary["undeployed"]) == (3, 3)


def test_an_undeploy_that_fails_stops_no_other_then_raises_for_redelivery(
    fake_vertex: FakeJobService,
    fake_endpoints: FakeEndpointService,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(main.ENV_REGIONS, "us-central1,europe-west4")
    labels = {"pulumi_project": "vertex-training", "pulumi_stack": "dev"}
    first = fake_endpoints.add_endpoint(f"{PARENT}/endpoints/1", labels)
    second = fake_endpoints.add_endpoint(f"{OTHER_REGION}/endpoints/2", labels)
    deploy(fake_endpoints, first.name, f"{STACK_MODEL}@1")
    deploy(fake_endpoints, second.name, f"{OTHER_REGION}/models/vertex-training-dev@1")
    fake_endpoints.fail("UndeployModel", grpc.StatusCode.UNAVAILABLE, times=1)
    with pytest.raises(main.CancelFailed, match="undeploy"):
        notify(budget(cost=100.01))
    assert fake_endpoints.deployed(second.name) == {}  # the other region's went on
    assert len(fake_endpoints.deployed(first.name)) == 1
    assert next(r["message"] for r in logs(capsys) if r["severity"] == "ERROR") == "could not undeploy model"
    # The redelivery finishes the job.
    notify(budget(cost=100.01))
    assert fake_endpoints.deployed(first.name) == {}


def test_an_undeploy_refused_while_another_runs_on_its_endpoint_is_done_by_the_redelivery(
    fake_vertex: FakeJobService, fake_endpoints: FakeEndpointService
) -> None:
    """The function does not wait for its undeploys: the model with the traffic goes last and is refused
    while the first undeploy still runs (the model it would move traffic to is still listed); Pub/Sub
    redelivers, and the next delivery undeploys it."""
    labels = {"pulumi_project": "vertex-training", "pulumi_stack": "dev"}
    ours = fake_endpoints.add_endpoint(f"{PARENT}/endpoints/1", labels).name
    deploy(fake_endpoints, ours, f"{STACK_MODEL}@1")
    newest = deploy(fake_endpoints, ours, f"{STACK_MODEL}@2")
    fake_endpoints.operation_polls = 10**6  # the undeploys outlast the function
    with pytest.raises(main.CancelFailed, match=newest):
        notify(budget(cost=100.01))
    fake_endpoints.operations.finish_all()  # Vertex finishes the first undeploy
    notify(budget(cost=100.01))
    fake_endpoints.operations.finish_all()
    assert fake_endpoints.deployed(ours) == {}
