"""A first `up` waits for eventually consistent changes by retrying their first use (issue 43): the program's
error hook (components/propagation.py) and the dynamic providers' retry wrapper (dynamic/retries.py), both
bounded by IAM's documented worst case (dynamic/propagation.py), one line per retry."""

from __future__ import annotations

import asyncio

import pulumi
import pytest
from google.api_core import exceptions as gexc

from infra.components import propagation as hooks
from infra.dynamic import propagation, retries

# The refusal a fresh project's first Pub/Sub-triggered function meets (service_agents.py's sources).
EVENTARC = (
    "Error creating function: googleapi: Error 403: Permission denied while using the Eventarc Service "
    "Agent. If you recently started to use Eventarc, it may take a few minutes before all necessary "
    "permissions are propagated to the Service Agent."
)
# Google's refusal of an API enabled moments ago (SERVICE_DISABLED).
DISABLED = (
    "Cloud Build API has not been used in project 123456789012 before or it is disabled. Enable it by "
    "visiting https://console.developers.google.com/apis/api/cloudbuild.googleapis.com/overview"
)
GRANTS = [propagation.PERMISSION_NOT_YET, propagation.API_NOT_YET]


def test_the_delays_add_up_to_the_documented_worst_case() -> None:
    assert sum(propagation.DELAYS) == propagation.WORST_CASE_SECONDS == 7 * 60
    assert propagation.delay(1) == propagation.DELAYS[0]
    assert propagation.delay(len(propagation.DELAYS) + 1) is None


def test_a_fresh_grants_refusal_is_retried_until_the_worst_case_then_stands() -> None:
    errors = [EVENTARC]
    assert hooks.decide("create", errors, GRANTS) == (propagation.DELAYS[0], EVENTARC)
    waited = 0.0
    while (found := hooks.decide("create", errors, GRANTS)) is not None:
        waited += found[0]
        errors = [EVENTARC, *errors]
    assert waited == propagation.WORST_CASE_SECONDS and len(errors) == len(propagation.DELAYS) + 1


def test_other_failures_and_deletes_are_not_retried() -> None:
    assert hooks.decide("create", ["Error 409: already exists"], GRANTS) is None
    assert hooks.decide("delete", [EVENTARC], GRANTS) is None
    # The APIs' hook retries an API not yet enabled, not a missing permission.
    assert hooks.decide("create", [EVENTARC], [propagation.API_NOT_YET]) is None
    assert hooks.decide("update", [DISABLED], [propagation.API_NOT_YET]) is not None


def test_the_hook_says_what_it_waits_for_then_asks_for_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(propagation, "DELAYS", (0.01, 0.01))
    said: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda message, *args, **kwargs: said.append(message))
    on_error = hooks.on_error_function("the test's new grants", GRANTS)

    def call(errors: list[str], kind: str = "gcp:cloudfunctionsv2/function:Function") -> bool:
        args = pulumi.ErrorHookArgs("urn", "", "kill-switch", kind, failed_operation="create", errors=errors)
        loop = asyncio.new_event_loop()  # not asyncio.run: it unsets the thread's loop the SDK's mocks use
        try:
            return loop.run_until_complete(on_error(args))
        finally:
            loop.close()

    assert call([EVENTARC]) is True
    assert call([EVENTARC] * 3) is False  # past the (shortened) worst case
    assert call([EVENTARC], "pulumi-python:dynamic/vertex:CustomJob") is False  # it retries itself
    (line,) = said
    assert line.startswith(
        "create of gcp:cloudfunctionsv2/function:Function kill-switch was refused (Error creating function"
    )
    assert "waiting for the test's new grants; retry 1" in line and propagation.PROPAGATION_URL in line


def test_the_providers_retry_an_api_enabled_moments_ago(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(propagation, "DELAYS", (0.01, 0.01))
    answers: list[Exception | str] = [gexc.PermissionDenied(DISABLED), gexc.PermissionDenied(DISABLED), "ok"]

    def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def error(message: str, cause: gexc.GoogleAPICallError) -> Exception:
        return RuntimeError(message)

    assert retries.with_retry(call, "Creating a build", 0.01, error=error, service="Cloud Build") == "ok"
    lines = [line for line in capsys.readouterr().err.splitlines() if "waiting for" in line]
    assert len(lines) == 2 and "the API enabled by this `up` to accept calls" in lines[0]


def test_a_permission_really_missing_is_not_retried_by_the_providers() -> None:
    calls: list[int] = []

    def call() -> None:
        calls.append(1)
        raise gexc.PermissionDenied("Permission 'aiplatform.customJobs.create' denied on resource")

    with pytest.raises(gexc.PermissionDenied):
        retries.with_retry(call, "Creating a job", 0.01, error=lambda m, c: RuntimeError(m), service="Vertex")
    assert calls == [1]


def test_a_cli_without_error_hooks_still_runs_the_program_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infra.stack import build
    from tests.fakes.pulumi_mocks import run_program
    from tests.stack.conftest import stack_config

    monkeypatch.setattr(hooks, "supported", lambda: False)
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    run = run_program(lambda: build(stack_config("dev")), stack="dev")
    assert run.by_type("gcp:cloudfunctionsv2/function:Function")
    assert not any(r.error_hooks for r in run.resources)
    assert any("takes no error hooks" in line for line in warned)
