"""Reading a job's log: Cloud Logging (the real LoggingServiceV2Client, a fake service) and local files."""

import datetime
import json
import threading
import time

import grpc
import pytest
from google.cloud import aiplatform_v1

from infra.vertex.logs import cloud as logs
from infra.vertex.logs.cloud import CloudJobLog, replica_name
from infra.vertex.logs.local import LocalJobLog
from infra.vertex.provider import CustomJobProvider
from tests.vertex.props import PROJECT, REGION, job_props

JobState = aiplatform_v1.JobState
JOB = f"projects/{PROJECT}/locations/{REGION}/customJobs/1000"


def at(seconds_ago: float) -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds_ago)


def job_log(warnings: list[str]) -> CloudJobLog:
    return CloudJobLog(PROJECT, JOB, logs.rfc3339(at(3600)), warn=warnings.append)


def test_replica_names_follow_the_pool_roles():
    assert replica_name("workerpool0-0") == "chief-0"
    assert replica_name("workerpool1-2") == "worker-2"
    assert replica_name("workerpool2-0") == "ps-0"
    assert replica_name("workerpool3-1") == "evaluator-1"
    assert replica_name("") == "job"


def test_new_entries_across_polls_none_twice_none_lost_in_order(fake_google):
    warnings: list[str] = []
    log = job_log(warnings)
    fake = fake_google.logs
    fake.add(PROJECT, "1000", "second", timestamp=at(50))
    fake.add(PROJECT, "1000", "first", timestamp=at(60))
    fake.add(PROJECT, "999", "another job", timestamp=at(55))
    fake.add(PROJECT, "1000", "worker says hi", task="workerpool1-0", timestamp=at(40), task_in_labels=True)
    assert log.read() == ["chief-0| first", "chief-0| second", "worker-0| worker says hi"]
    # Same timestamp as the last line printed, later insertId: new, and must not be skipped.
    last = fake.entries[PROJECT][-1]
    fake.add(PROJECT, "1000", "same instant", timestamp=last.timestamp, insert_id=last.insert_id + "z")
    fake.add(PROJECT, "1000", "line a\nline b", timestamp=at(30))
    assert log.read() == ["chief-0| same instant", "chief-0| line a", "chief-0| line b"]
    assert log.read() == []
    assert len(fake.calls) == 3 == log.calls  # one Logging call per read
    _, sent = fake.calls[-1]
    assert sent.resource_names == [f"projects/{PROJECT}"]
    assert 'resource.type="ml_job"' in sent.filter and 'resource.labels.job_id="1000"' in sent.filter
    assert warnings == []


def test_entries_younger_than_the_settle_time_wait_for_the_next_poll(fake_google, monkeypatch):
    monkeypatch.setattr(logs, "SETTLE_SECONDS", 30.0)
    log = job_log([])
    fake_google.logs.add(PROJECT, "1000", "settled", timestamp=at(60))
    fake_google.logs.add(PROJECT, "1000", "fresh", timestamp=at(1))
    assert log.read() == ["chief-0| settled"]
    # When the job has ended, the rest is read without the upper bound (after waiting the settle time).
    monkeypatch.setattr(logs, "SETTLE_SECONDS", 0.0)
    assert log.read(final=True) == ["chief-0| fresh"]


def test_a_full_page_leaves_the_rest_to_the_next_poll(fake_google, monkeypatch):
    monkeypatch.setattr(logs, "PAGE_SIZE", 2)
    log = job_log([])
    for i in range(7):
        fake_google.logs.add(PROJECT, "1000", f"line {i}", timestamp=at(60 - i))
    assert log.read() == ["chief-0| line 0", "chief-0| line 1"]
    assert log.read() == ["chief-0| line 2", "chief-0| line 3"]
    assert len(fake_google.logs.calls) == 2
    assert log.read(final=True) == ["chief-0| line 4", "chief-0| line 5", "chief-0| line 6"]


def test_entries_beyond_the_final_pages_are_announced_not_dropped_silently(fake_google, monkeypatch):
    monkeypatch.setattr(logs, "PAGE_SIZE", 2)
    monkeypatch.setattr(logs, "FINAL_PAGES", 2)
    warnings: list[str] = []
    log = job_log(warnings)
    for i in range(5):
        fake_google.logs.add(PROJECT, "1000", f"line {i}", timestamp=at(60 - i))
    assert len(log.read(final=True)) == 4
    assert len(warnings) == 1 and "not shown here" in warnings[0]


def test_permission_denied_warns_once_and_stops_reading(fake_google):
    warnings: list[str] = []
    log = job_log(warnings)
    fake_google.logs.fail(
        "ListLogEntries", grpc.StatusCode.PERMISSION_DENIED, message="logging.logEntries.list denied"
    )
    fake_google.logs.add(PROJECT, "1000", "hidden", timestamp=at(60))
    assert log.read() == []
    assert log.read() == [] and log.read(final=True) == []
    assert len(fake_google.logs.calls) == 1
    (warning,) = warnings
    assert "roles/logging.viewer" in warning and "The job goes on" in warning


def test_a_logging_failure_warns_once_and_loses_nothing(fake_google):
    warnings: list[str] = []
    log = job_log(warnings)
    fake_google.logs.add(PROJECT, "1000", "kept", timestamp=at(60))
    fake_google.logs.fail("ListLogEntries", grpc.StatusCode.UNAVAILABLE, times=2)
    assert log.read() == [] and log.read() == []
    assert log.read() == ["chief-0| kept"]
    assert len(warnings) == 1 and "retrying on later polls" in warnings[0]
    assert len(fake_google.logs.calls) == 3  # no hidden retries inside a poll


def test_the_fake_honours_page_tokens_and_rejects_bad_requests(fake_google):
    from google.api_core import exceptions as gexc
    from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
    from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport

    from infra.dynamic.endpoints import client_kwargs

    client = LoggingServiceV2Client(**client_kwargs(LoggingServiceV2GrpcTransport, "unused"))
    for i in range(5):
        fake_google.logs.add(PROJECT, "1000", f"{i}", timestamp=at(10 - i))
    pager = client.list_log_entries(request={"resource_names": [f"projects/{PROJECT}"], "page_size": 2})
    assert [e.text_payload for e in pager] == ["0", "1", "2", "3", "4"]  # the pager followed the tokens
    with pytest.raises(gexc.InvalidArgument):
        client.list_log_entries(request={"resource_names": [f"projects/{PROJECT}"], "page_size": 1001})
    with pytest.raises(gexc.InvalidArgument):
        client.list_log_entries(request={"resource_names": [f"projects/{PROJECT}"], "filter": "foo>"})


def test_local_log_files_are_tailed_line_by_line(tmp_path):
    log = LocalJobLog(tmp_path)
    chief = tmp_path / "workerpool0-0.log"
    chief.write_text("epoch 1\nepo")
    assert log.read() == ["chief-0| epoch 1"]
    with open(chief, "a") as f:
        f.write("ch 2\n")
    (tmp_path / "workerpool1-0.log").write_text("worker line\nno newline yet")
    assert log.read() == ["chief-0| epoch 2", "worker-0| worker line"]
    assert log.read() == []
    assert log.read(final=True) == ["worker-0| no newline yet"]


def test_create_prints_the_job_log_while_it_runs(fake_google, capsys):
    """The log line reaches stderr while the job is RUNNING, before the state changes to SUCCEEDED."""
    fake_google.jobs.auto_advance = False
    provider = CustomJobProvider()
    props = provider.check({}, job_props(poll_interval_seconds=0.05)).inputs
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(out=provider.create(props)))
    thread.start()
    while not fake_google.jobs.jobs:
        time.sleep(0.01)
    (name,) = fake_google.jobs.jobs
    fake_google.jobs.set_state(name, JobState.JOB_STATE_RUNNING)
    fake_google.logs.add(PROJECT, name.rsplit("/", 1)[-1], "head epoch 1/3 accuracy=0.61 (12.0s)")
    seen = len(fake_google.logs.calls)
    while len(fake_google.logs.calls) < seen + 2:  # a whole read began after the entry was added
        time.sleep(0.01)
    fake_google.jobs.set_state(name, JobState.JOB_STATE_SUCCEEDED)
    thread.join(timeout=30)
    assert result["out"].outs["state"] == "JOB_STATE_SUCCEEDED"
    err = capsys.readouterr().err
    line = "[train-densenet] chief-0| head epoch 1/3 accuracy=0.61 (12.0s)"
    assert err.count(line) == 1
    assert err.index(line) < err.index(f"{name}: JOB_STATE_SUCCEEDED")


def test_one_logging_call_per_poll_while_the_job_runs_none_while_queued(fake_google):
    """The figure behind "Logging calls per hour": one per poll once machines exist, plus one at the end."""
    fake_google.jobs.auto_advance = False
    provider = CustomJobProvider()
    props = provider.check({}, job_props(poll_interval_seconds=0.02)).inputs
    thread = threading.Thread(target=lambda: provider.create(props))
    thread.start()
    while not fake_google.jobs.jobs:
        time.sleep(0.01)
    (name,) = fake_google.jobs.jobs

    def gets() -> int:
        return fake_google.jobs.methods().count("GetCustomJob")

    while gets() < 3:
        time.sleep(0.01)
    assert fake_google.logs.calls == []  # queued: nothing to read yet
    fake_google.jobs.set_state(name, JobState.JOB_STATE_RUNNING)
    running_from = gets()
    while gets() < running_from + 4:
        time.sleep(0.01)
    fake_google.jobs.set_state(name, JobState.JOB_STATE_SUCCEEDED)
    thread.join(timeout=30)
    polls_running = gets() - running_from  # the last one saw SUCCEEDED
    assert polls_running - 1 <= len(fake_google.logs.calls) <= polls_running + 1


def test_a_broken_live_log_never_ends_the_wait(fake_google, monkeypatch, capsys):
    """Anything the log reader raises (not only API errors) stops the log, never the job's wait."""

    class Broken:
        def tick(self, _status):
            raise RuntimeError("proto marshal surprise")

    monkeypatch.setattr("infra.vertex.custom_job.kind.watcher", lambda *_args: Broken())
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, job_props()).inputs).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    err = capsys.readouterr().err
    assert err.count("live log stopped (RuntimeError: proto marshal surprise)") == 1


def test_structured_entries_print_as_plain_json():
    from google.cloud.logging_v2.types import LogEntry

    entry = LogEntry(json_payload={"levelname": "INFO", "x": {"a": [1, None]}})
    assert json.loads(logs.entry_text(entry)) == {"levelname": "INFO", "x": {"a": [1.0, None]}}
    assert logs.entry_text(LogEntry(json_payload={"message": "epoch 1/3"})) == "epoch 1/3"
