"""The kill switch end to end on a real Pub/Sub: Google's emulator pushes budget notifications to the deployed
entry point (infra/guard/main.py, served by functions-framework) which cancels jobs and undeploys models on
the fake Vertex.

Notifications are shaped as Cloud Billing documents them
(https://cloud.google.com/billing/docs/how-to/budgets-programmatic-notifications, read 2026-11-22): JSON data
with budgetDisplayName, costAmount, costIntervalStart, budgetAmount, budgetAmountType, currencyCode and, once
a threshold is crossed, alertThresholdExceeded; attributes billingAccountId, budgetId, schemaVersion "1.0".
A push subscription acknowledges a message when the endpoint answers 2xx and redelivers it otherwise
(https://cloud.google.com/pubsub/docs/push). Needs the gcloud CLI's Pub/Sub emulator and Java: skipped where
they are missing, except under CI=true, where it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.cloud import aiplatform_v1, pubsub_v1

from infra.components.killswitch import ENTRY_POINT, SOURCE_FILES, source_path
from infra.guard import main
from tests.fakes.endpoint_service import FakeEndpointService
from tests.fakes.vertex import TERMINAL, FakeJobService
from tests.fakes.vertex_jobs import FakeVertexJobs

JobState = aiplatform_v1.JobState
PROJECT, REGION = "test-project", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
FALLBACK_PARENT = f"projects/{PROJECT}/locations/us-east4"  # a fallback region of the stack's chain
ATTRIBUTES = {"billingAccountId": "01D4EE-079462-DFD6EC", "budgetId": "de72f49d", "schemaVersion": "1.0"}
WAIT_S = 20.0  # bound on every wait: startup and delivery


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def _stop(process: subprocess.Popen) -> None:
    """End the process group this test started: the emulator's gcloud wrapper starts java beneath it, and java
    may outlive the wrapper, so the group always gets SIGKILL at the end."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=1)  # nothing to save: a test emulator needs no clean shutdown
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _missing_tools() -> str | None:
    """Why the emulator cannot start here: a missing binary, or an SDK without the pubsub-emulator component
    (distribution packages often leave it out, and a non-interactive gcloud may try to install it)."""
    missing = [tool for tool in ("gcloud", "java") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH (the Pub/Sub emulator needs both)"
    info = subprocess.run(
        ["gcloud", "info", "--format=value(installation.sdk_root)"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    component = Path(info.stdout.strip()) / "platform" / "pubsub-emulator"
    if info.returncode != 0 or not info.stdout.strip() or not component.is_dir():
        return f"the gcloud SDK has no pubsub-emulator component ({component} is missing)"
    return None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Google's Pub/Sub emulator on a free localhost port, once for the module."""
    reason = _missing_tools()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the kill switch on the Pub/Sub emulator: {reason}")
        pytest.skip(reason)
    host = f"127.0.0.1:{_free_port()}"
    log = tmp_path_factory.mktemp("pubsub") / "emulator.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["gcloud", "beta", "emulators", "pubsub", "start", f"--host-port={host}", f"--project={PROJECT}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        _until(
            lambda: process.poll() is not None or "Server started" in log.read_text(errors="replace"),
            "the Pub/Sub emulator",
            timeout=60,
        )
        assert process.poll() is None, f"the Pub/Sub emulator exited:\n{log.read_text(errors='replace')}"
        yield host
    finally:
        _stop(process)


class Guard:
    """The deployed entry point under functions-framework, its JSON log lines, the fake Vertex it calls."""

    def __init__(self, vertex: FakeJobService, endpoints: FakeEndpointService, url: str, log: Path) -> None:
        self.vertex, self.endpoints, self.url, self.log = vertex, endpoints, url, log

    def records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def said(self, message: str, budget_id: str) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["message"] == message and r.get("budget_id") == budget_id]

    def cancelled(self) -> list[str]:
        return [req.name for method, req in self.vertex.calls if method == "CancelCustomJob"]

    def baseline(self) -> int:
        """Start a test from a quiet Vertex, whatever ran before: every job an earlier test left live ends,
        and the cancels so far are counted (`cancelled_since` compares against that count)."""
        for name, job in list(self.vertex.jobs.items()):
            if job.state not in TERMINAL:
                self.vertex.set_state(name, JobState.JOB_STATE_CANCELLED)
        return len(self.cancelled())

    def cancelled_since(self, baseline: int) -> list[str]:
        return self.cancelled()[baseline:]


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guard]:
    vertex = FakeVertexJobs()  # the guard lists every kind of job
    endpoints = FakeEndpointService()  # and every endpoint
    endpoints.operation_polls = 0  # nobody polls the function's undeploys: Vertex ends them on its own
    vertex_host = vertex.start(*endpoints.handlers())
    port = _free_port()
    log = tmp_path_factory.mktemp("guard") / "function.log"
    # Exactly the files the stack uploads (SOURCE_FILES), alone in a directory as the function's source is:
    # a module the function imports but the archive leaves out fails here.
    source = tmp_path_factory.mktemp("function-source")
    for name in SOURCE_FILES:
        shutil.copy(source_path(name), source / name)
    env = {
        **os.environ,
        "VERTEX_AI_EMULATOR_HOST": vertex_host,
        main.ENV_PROJECT: PROJECT,
        main.ENV_REGION: REGION,
        main.ENV_REGIONS: f"{REGION},us-east4",
        main.ENV_PULUMI_PROJECT: "vertex-training",
        main.ENV_PULUMI_STACK: "dev",
        main.ENV_THRESHOLD: "1.0",
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "functions_framework",
                f"--source={source / 'main.py'}",
                f"--target={ENTRY_POINT}",
                "--signature-type=cloudevent",
                "--host=127.0.0.1",
                f"--port={port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=source,
            start_new_session=True,
        )
    try:

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        _until(lambda: process.poll() is not None or listening(), "functions-framework")
        assert process.poll() is None, f"functions-framework exited:\n{log.read_text(errors='replace')}"
        yield Guard(vertex, endpoints, f"http://127.0.0.1:{port}/", log)
    finally:
        _stop(process)
        vertex.stop()


@pytest.fixture(scope="module")
def topic(emulator: str, guard: Guard) -> Iterator[tuple[pubsub_v1.PublisherClient, str]]:
    """The stack's budget topic with a push subscription to the function, as Eventarc would create it."""
    os.environ["PUBSUB_EMULATOR_HOST"] = emulator  # read by the clients when they are made
    try:
        publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
        name = publisher.topic_path(PROJECT, "vt-dev-budget")
        publisher.create_topic(name=name)
        subscriber.create_subscription(
            request={
                "name": subscriber.subscription_path(PROJECT, "eventarc-vt-killswitch"),
                "topic": name,
                "push_config": {"push_endpoint": guard.url},
                "ack_deadline_seconds": 10,
                "retry_policy": {"minimum_backoff": {"seconds": 0}, "maximum_backoff": {"seconds": 1}},
            }
        )
        yield publisher, name
    finally:
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)


def seed(
    vertex: FakeJobService, stack: str, state: JobState = JobState.JOB_STATE_RUNNING, parent: str = PARENT
) -> str:
    labels = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": stack}
    return vertex.add_job(parent, aiplatform_v1.CustomJob(display_name=f"{stack}-job", labels=labels), state)


def publish(topic: tuple[pubsub_v1.PublisherClient, str], budget_id: str, data: bytes) -> None:
    publisher, name = topic
    attributes = {**ATTRIBUTES, "budgetId": budget_id}
    publisher.publish(name, data, **attributes).result(timeout=WAIT_S)


def notification(cost: float, budget: float = 100.0, exceeded: float | None = None) -> bytes:
    payload: dict[str, Any] = {
        "budgetDisplayName": "vt dev test-project",
        "costAmount": cost,
        "costIntervalStart": "2026-11-01T07:00:00Z",
        "budgetAmount": budget,
        "budgetAmountType": "SPECIFIED_AMOUNT",
        "currencyCode": "USD",
    }
    if exceeded is not None:
        payload["alertThresholdExceeded"] = exceeded
    return json.dumps(payload).encode()


def test_below_the_threshold_nothing_is_cancelled(topic, guard: Guard) -> None:
    baseline = guard.baseline()
    ours = seed(guard.vertex, "dev")
    publish(topic, "below", notification(cost=50.0, exceeded=0.5))
    _until(lambda: guard.said("budget below kill-switch threshold; nothing to do", "below"), "the function")
    assert guard.cancelled_since(baseline) == []
    assert guard.vertex.jobs[ours].state == JobState.JOB_STATE_RUNNING


def test_a_malformed_message_is_acknowledged_with_one_line_and_cancels_nothing(topic, guard: Guard) -> None:
    baseline = guard.baseline()
    ours = seed(guard.vertex, "dev")
    before = len(guard.records())
    publish(topic, "malformed", b"this is not a budget notification")
    _until(lambda: len(guard.records()) > before, "the function")
    time.sleep(1.5)  # past the retry backoff (at most 1 s): an unacknowledged message would come back
    new = guard.records()[before:]
    assert [r["message"] for r in new] == ["ignored malformed budget notification"]
    assert new[0]["severity"] == "WARNING"
    assert guard.cancelled_since(baseline) == []
    assert guard.vertex.jobs[ours].state == JobState.JOB_STATE_RUNNING


def test_at_the_threshold_this_stacks_live_jobs_are_cancelled_and_a_redelivery_does_no_harm(
    topic, guard: Guard
) -> None:
    baseline = guard.baseline()
    running, queued = seed(guard.vertex, "dev"), seed(guard.vertex, "dev", JobState.JOB_STATE_QUEUED)
    other_stack = seed(guard.vertex, "prod")
    # The first delivery meets a Vertex outage: the function fails, Pub/Sub redelivers, the second one acts.
    guard.vertex.fail("ListCustomJobs", grpc.StatusCode.UNAVAILABLE, times=1)
    publish(topic, "at", notification(cost=100.0, exceeded=1.0))
    _until(lambda: guard.said("kill switch done", "at"), "the redelivered notification to be handled")
    assert (
        len(guard.said("budget kill-switch threshold reached; cancelling this stack's live jobs", "at")) >= 2
    )
    assert sorted(guard.cancelled_since(baseline)) == sorted([running, queued])
    assert guard.vertex.jobs[running].state == JobState.JOB_STATE_CANCELLING
    assert guard.vertex.jobs[other_stack].state == JobState.JOB_STATE_RUNNING
    # The same notification once more (a duplicate delivery): nothing live is left to cancel, nothing fails.
    publish(topic, "again", notification(cost=100.0, exceeded=1.0))
    _until(lambda: guard.said("kill switch done", "again"), "the duplicate to be handled")
    (done,) = guard.said("kill switch done", "again")
    assert (done["cancelled"], done["failed"]) == (0, 0)
    assert sorted(guard.cancelled_since(baseline)) == sorted([running, queued])
    assert guard.vertex.jobs[other_stack].state == JobState.JOB_STATE_RUNNING


def test_a_job_in_a_fallback_region_is_cancelled_even_when_listing_studies_fails(topic, guard: Guard) -> None:
    """The job moved to us-east4 after a stockout at home: the budget still reaches it. Studies are listed
    first; that listing failing (an RPC this Vertex does not answer) no longer stops the training jobs'
    cancels: they happen, the function fails, and the redelivery finishes."""
    baseline = guard.baseline()
    home, moved = seed(guard.vertex, "dev"), seed(guard.vertex, "dev", parent=FALLBACK_PARENT)
    guard.vertex.fail("ListHyperparameterTuningJobs", grpc.StatusCode.UNIMPLEMENTED, times=1)
    publish(topic, "moved", notification(cost=100.0, exceeded=1.0))
    _until(lambda: guard.said("kill switch done", "moved"), "the redelivered notification to be handled")
    (incomplete, *_) = guard.said("kill switch incomplete; Pub/Sub will redeliver", "moved")
    assert incomplete["unlisted"] == ["us-central1 list_hyperparameter_tuning_jobs"]
    assert sorted(guard.cancelled_since(baseline)) == sorted([home, moved])
    assert guard.vertex.jobs[moved].state == JobState.JOB_STATE_CANCELLING


def test_at_the_threshold_the_stacks_deployed_model_is_undeployed_after_its_jobs(topic, guard: Guard) -> None:
    baseline = guard.baseline()
    running = seed(guard.vertex, "dev")
    labels = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": "dev"}
    endpoint = guard.endpoints.add_endpoint(f"{FALLBACK_PARENT}/endpoints/7", labels)
    guard.endpoints.deploy_now(endpoint.name, f"{FALLBACK_PARENT}/models/vertex-training-dev@1")
    (deployed_id,) = guard.endpoints.deployed(endpoint.name)
    publish(topic, "serving", notification(cost=100.0, exceeded=1.0))
    _until(lambda: guard.said("kill switch done", "serving"), "the notification to be handled")
    assert guard.cancelled_since(baseline) == [running]
    assert guard.endpoints.deployed(endpoint.name) == {} and guard.endpoints.traffic(endpoint.name) == {}
    (undeploying,) = [r for r in guard.records() if r["message"] == "undeploying model"]
    assert (undeploying["endpoint"], undeploying["deployed_model_id"]) == (endpoint.name, deployed_id)
    (done,) = guard.said("kill switch done", "serving")
    assert (done["cancelled"], done["undeployed"]) == (1, 1)
