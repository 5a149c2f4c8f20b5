"""Retry until a deadline (capacity_deadline_seconds): whole passes round the chain with a growing, jittered
gap, one line per pass, the final paragraph counting the passes; one shape at a time, never two live jobs."""

import pytest

from infra.vertex.capacity.placement import Shape
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import attempts
from infra.vertex.lifecycle.attempts import AttemptRecord, Deadline, ShapeResult
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.request import JobRequest

CHAIN = [
    Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT", "us-central1"),
    Shape("n1-standard-8", "NVIDIA_TESLA_T4", 1, "SPOT", "us-east4"),
]
PROPS = {"display_name": "train", "project": "p", "region": "us-central1", "capacity_deadline_seconds": 900}
REQUEST = JobRequest.parse(CUSTOM_JOB, PROPS)


class Clock:
    """A fake clock that only sleeping moves; `run` may spend time too."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def runner(clock: Clock, succeed_on_call: int | None = None, seconds_per_run: float = 10.0):
    calls: list[str] = []
    live: list[str] = []

    def run(index: int, shape: Shape) -> ShapeResult:
        assert not live, "a shape ran while another job was live"
        name = f"job-{len(calls)}"
        live.append(name)
        calls.append(shape.region)
        clock.now += seconds_per_run
        live.remove(name)
        if succeed_on_call is not None and len(calls) == succeed_on_call:
            return ShapeResult([AttemptRecord(index, shape, name, "JOB_STATE_SUCCEEDED", "")])
        return ShapeResult([AttemptRecord(index, shape, name, "JOB_STATE_FAILED", "stockout")], move_on=True)

    return run, calls


def deadline(clock: Clock, seconds: float) -> Deadline:
    return Deadline(seconds, clock=lambda: clock.now, sleep=clock.sleep, draw=lambda low, high: 1.0)


def exhausted(records):
    return JobError(attempts.exhausted_message(REQUEST, records))


def test_passes_repeat_with_a_growing_gap_until_the_deadline_and_the_paragraph_counts_them():
    clock, said = Clock(), []
    run, calls = runner(clock)
    with pytest.raises(JobError) as raised:
        attempts.try_shapes(CHAIN, 0, run, said.append, exhausted, deadline(clock, 900))
    # Each pass spends 20 s; gaps 60, 96, 153.6, 245.76 s; after pass 5 (at 655.4 s) the next gap, 300 s,
    # would end past the deadline.
    assert clock.sleeps == pytest.approx([60.0, 96.0, 153.6, 245.76])
    assert calls == ["us-central1", "us-east4"] * 5
    pass_lines = [line for line in said if line.startswith("pass ")]
    assert len(pass_lines) == 4 and pass_lines[0].startswith(
        "pass 1: all 2 shapes gave way; trying the chain again"
    )
    message = str(raised.value)
    assert "5 passes round the chain were made before capacity_deadline_seconds 900 ran out" in message
    assert "could not get machines in us-central1, us-east4" in message


def test_a_later_pass_that_finds_capacity_returns_its_shape():
    clock = Clock()
    run, calls = runner(clock, succeed_on_call=4)
    index, result, records = attempts.try_shapes(
        CHAIN, 0, run, lambda line: None, exhausted, deadline(clock, 900)
    )
    assert (index, calls, result.records[0].state) == (
        1,
        ["us-central1", "us-east4"] * 2,
        "JOB_STATE_SUCCEEDED",
    )
    assert [r.passes for r in records] == [1, 1, 2, 2]


def test_no_deadline_is_one_pass_and_a_lone_shape_raises_its_own_error():
    clock = Clock()
    run, calls = runner(clock)
    with pytest.raises(JobError) as raised:
        attempts.try_shapes(CHAIN, 0, run, lambda line: None, exhausted)
    assert calls == ["us-central1", "us-east4"] and clock.sleeps == []
    assert "passes round the chain" not in str(raised.value)

    lone = JobError("the shape's own error")

    def gives_way(index, shape):
        return ShapeResult(
            [AttemptRecord(index, shape, "j", "JOB_STATE_FAILED", "stockout")], move_on=True, error=lone
        )

    with pytest.raises(JobError, match="the shape's own error"):
        attempts.try_shapes(CHAIN[:1], 0, gives_way, lambda line: None, exhausted)


def test_an_adopted_job_resumes_mid_chain_and_later_passes_start_from_the_first_shape():
    clock = Clock()
    run, calls = runner(clock)
    with pytest.raises(JobError):
        attempts.try_shapes(CHAIN, 1, run, lambda line: None, exhausted, deadline(clock, 100))
    assert calls == ["us-east4", "us-central1", "us-east4"]


def test_backoff_grows_by_1_6_to_300_seconds_with_jitter_inside_20_percent():
    gaps = [attempts.backoff_seconds(n, lambda low, high: 1.0) for n in range(1, 7)]
    assert gaps == pytest.approx([60.0, 96.0, 153.6, 245.76, 300.0, 300.0])
    assert attempts.backoff_seconds(1, lambda low, high: low) == pytest.approx(48.0)
    assert attempts.backoff_seconds(9, lambda low, high: high) == pytest.approx(360.0)
    assert (
        Deadline.of(JobRequest.parse(CUSTOM_JOB, {**PROPS, "capacity_deadline_seconds": 3600})).seconds
        == 3600
    )
    assert Deadline.of(JobRequest.parse(CUSTOM_JOB, {})).seconds == 0.0
