"""The heartbeat line while a job waits for machines, and how often it comes."""

from infra.vertex.custom_job.watch import Watcher
from infra.vertex.lifecycle.heartbeat import HEARTBEAT_SECONDS, QUEUED_LONG_SECONDS, heartbeat_line
from infra.vertex.lifecycle.status import JobStatus


def test_a_short_queue_says_state_and_time():
    assert heartbeat_line("JOB_STATE_QUEUED", 185, False, "p", "url") == "still queued after 3m 05s"


def test_provisioning_says_what_is_happening():
    line = heartbeat_line("JOB_STATE_PENDING", 3700, False, "p", "url")
    assert line.startswith("still pending after 1h 01m") and "provisioned" in line


def test_a_long_queue_names_the_likely_causes_and_where_to_look():
    line = heartbeat_line("JOB_STATE_QUEUED", QUEUED_LONG_SECONDS + 1, True, "my-proj", "https://job")
    assert "preemptible (Spot) custom training quota" in line
    assert "https://console.cloud.google.com/iam-admin/quotas?project=my-proj" in line
    assert "https://job" in line
    on_demand = heartbeat_line("JOB_STATE_QUEUED", QUEUED_LONG_SECONDS + 1, False, "p", "u")
    assert "preemptible" not in on_demand and "custom training quota" in on_demand


class NoLog:
    def read(self, final=False):
        return []


def test_at_most_one_heartbeat_per_interval_and_only_while_waiting():
    now = [1000.0]
    said: list[str] = []
    watch = Watcher(False, "p", NoLog(), said.append, clock=lambda: now[0])
    queued = JobStatus("j", "JOB_STATE_QUEUED", "url")
    for step in range(0, 601, 10):  # ten minutes of polls every 10 s
        now[0] = 1000.0 + step
        watch.tick(queued)
    assert len(said) == 600 // HEARTBEAT_SECONDS
    assert said[0] == "still queued after 3m 00s"
    said.clear()
    running = JobStatus("j", "JOB_STATE_RUNNING", "url")
    for step in range(601, 2000, 10):
        now[0] = 1000.0 + step
        watch.tick(running)
    assert said == []
