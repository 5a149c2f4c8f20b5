"""Regions in the chain through the provider: the real JobServiceClient against the fake JobService, whose
jobs live per `projects/P/locations/R` parent and whose capacity is per region and shape (issue 25)."""

from collections.abc import Iterator

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.custom_job import spec
from infra.vertex.lifecycle import attempts
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.restarts import ATTEMPT_LABEL
from infra.vertex.provider import CustomJobProvider
from infra.vertex.runners.vertex import VertexRunner
from tests.fakes.vertex import STOCKOUT, STOCKOUT_MESSAGE, TERMINAL, FakeJobService, region_of, shape_of
from tests.vertex.props import PROJECT, REGION, custom_job_request, job_props

JobState = aiplatform_v1.JobState
OTHER = "us-east4"
HOME_PARENT = f"projects/{PROJECT}/locations/{REGION}"
OTHER_PARENT = f"projects/{PROJECT}/locations/{OTHER}"
L4 = {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}
T4_SPOT = ("n1-standard-8", "NVIDIA_TESLA_T4", "SPOT")
L4_SPOT = ("g2-standard-8", "NVIDIA_L4", "SPOT")
TENSORBOARD = f"{HOME_PARENT}/tensorboards/7"
# n1-standard-8 + 1 x T4 on demand in us-central1, from the cited table (pricing.TABLE; no catalog here).
HOURLY = 0.436998 + 0.4025


def checked(**overrides) -> dict:
    props = job_props(**{"spot": True, "fallbacks": [L4], "fallback_regions": [OTHER], **overrides})
    result = CustomJobProvider().check({}, props)
    assert result.failures == []
    return result.inputs


def created(fake: FakeJobService) -> list[aiplatform_v1.CreateCustomJobRequest]:
    return [request for method, request in fake.calls if method == "CreateCustomJob"]


def live(fake: FakeJobService, key: str) -> list[str]:
    """Names of the jobs with this key that have not ended, in every region."""
    return [
        name
        for name, job in fake.jobs.items()
        if job.labels.get(KEY_LABEL) == key and job.state not in TERMINAL
    ]


def provider_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("[train-densenet]")]


@pytest.fixture
def runner_regions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """(verb, runner region, job name) of every get/cancel/delete: which regional endpoint each call used."""
    calls: list[tuple[str, str, str]] = []
    for verb in ("get", "cancel", "delete"):
        original = getattr(VertexRunner, verb)

        def spy(self, name, _verb=verb, _original=original):
            calls.append((_verb, self.region, name))
            return _original(self, name)

        monkeypatch.setattr(VertexRunner, verb, spy)
    return calls


def test_a_job_stocked_out_on_every_home_shape_runs_in_the_next_region_and_refresh_and_destroy_reach_it(
    fake_google, runner_regions, capsys
):
    fake_vertex = fake_google.jobs
    fake_vertex.capacity[(REGION, *T4_SPOT)] = STOCKOUT
    fake_vertex.capacity[(REGION, *L4_SPOT)] = STOCKOUT
    props = checked(tensorboard=TENSORBOARD, poll_interval_seconds=0.05)
    capsys.readouterr()  # check's preview lines; what follows is the attempt log of `up`
    outs = CustomJobProvider().create(props).outs

    requests = created(fake_vertex)
    assert [(r.parent, shape_of(r.custom_job)) for r in requests] == [
        (HOME_PARENT, T4_SPOT),
        (HOME_PARENT, L4_SPOT),
        (OTHER_PARENT, T4_SPOT),
    ]
    home, moved = requests[0].custom_job, requests[2].custom_job
    # The job in the other region, as the fake stores it under that region's parent: the same job.
    assert outs["job_name"].startswith(OTHER_PARENT + "/customJobs/")
    stored = fake_vertex.jobs[outs["job_name"]]
    ran, first = stored.job_spec.worker_pool_specs[0], home.job_spec.worker_pool_specs[0]
    image = props["worker_pools"][0]["image_uri"]  # from the home region's Artifact Registry repository
    assert ran.container_spec.image_uri == first.container_spec.image_uri == image
    assert list(ran.container_spec.args) == list(first.container_spec.args) == ["--epochs", "2"]
    assert list(ran.container_spec.command) == list(first.container_spec.command)
    assert stored.job_spec.service_account == home.job_spec.service_account == props["service_account"]
    assert stored.job_spec.base_output_directory.output_uri_prefix == "gs://demo-bucket/runs/1"
    assert home.job_spec.base_output_directory == stored.job_spec.base_output_directory  # checkpoints resume
    assert stored.labels[KEY_LABEL] == home.labels[KEY_LABEL]  # adoption finds it in any region
    assert moved.labels[ATTEMPT_LABEL] == "1-0-2"  # shape 2 of the chain: T4 Spot in us-east4
    # A Vertex job uses resources of its own region: the home region's TensorBoard is not linked there.
    assert home.job_spec.tensorboard == TENSORBOARD and stored.job_spec.tensorboard == ""

    assert outs["state"] == "JOB_STATE_SUCCEEDED"
    assert outs["placement"] == {
        "machine_type": "n1-standard-8",
        "accelerator_type": "NVIDIA_TESLA_T4",
        "accelerator_count": 1,
        "scheduling_strategy": "SPOT",
        "region": OTHER,
    }
    assert [(a["region"], a["machine_type"], a["state"]) for a in outs["attempts"]] == [
        (REGION, "n1-standard-8", "JOB_STATE_FAILED"),
        (REGION, "g2-standard-8", "JOB_STATE_FAILED"),
        (OTHER, "n1-standard-8", "JOB_STATE_SUCCEEDED"),
    ]
    assert outs["attempts"][0]["reason"].startswith(STOCKOUT_MESSAGE.format(region=REGION))
    assert f"locations/{OTHER}/training/" in outs["console_url"]

    lines = provider_lines(capsys.readouterr().err)
    assert [line.split("] ", 1)[1] for line in lines if "] leaving " in line] == [
        f"leaving n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT): {outs['attempts'][0]['reason']}; "
        "trying next: g2-standard-8 + 1 x NVIDIA_L4 (SPOT)",
        f"leaving g2-standard-8 + 1 x NVIDIA_L4 (SPOT) in {REGION}: {outs['attempts'][1]['reason']}; "
        f"trying next: n1-standard-8 + 1 x NVIDIA_TESLA_T4 (SPOT) in {OTHER}",
    ]
    assert any(f"in {OTHER}: the job runs without the TensorBoard link" in line for line in lines)
    assert "(3 attempts)" in lines[-1]
    # Every call on a job went to the region its resource name says.
    assert runner_regions and all(region == region_of(name) for _verb, region, name in runner_regions)

    # A later refresh reads it in us-east4; destroy deletes it there.
    runner_regions.clear()
    read = CustomJobProvider().read(outs["job_name"], outs).outs
    assert read["state"] == "JOB_STATE_SUCCEEDED" and read["placement"] == outs["placement"]
    assert read["attempts"] == outs["attempts"] and read["console_url"] == outs["console_url"]
    CustomJobProvider().delete(outs["job_name"], read)
    assert outs["job_name"] not in fake_vertex.jobs
    assert {(verb, region) for verb, region, _name in runner_regions} == {("get", OTHER), ("delete", OTHER)}
    print("\n".join(lines))  # the attempt log of a cross-region run (the closing note of issue 25)


def test_an_interrupted_create_adopts_the_live_job_in_the_fallback_region(fake_vertex):
    """The first `up` saw its home shapes stock out, submitted in us-east4 and was interrupted; the next `up`
    finds that job by its key label there and waits for it: no second job."""
    props = spec.with_defaults(checked())
    key = spec.job_key(props)
    home = fake_vertex.add_job(HOME_PARENT, custom_job_request(props, 0))
    fake_vertex.set_state(home, JobState.JOB_STATE_FAILED, STOCKOUT_MESSAGE.format(region=REGION), 8)
    earlier = fake_vertex.add_job(OTHER_PARENT, custom_job_request(props, 2), JobState.JOB_STATE_RUNNING)
    fake_vertex.jobs[earlier].labels[ATTEMPT_LABEL] = "1-0-2"
    fake_vertex._advancing.add(earlier)  # it goes on to succeed
    assert live(fake_vertex, key) == [earlier]

    outs = CustomJobProvider().create(checked()).outs
    assert outs["job_name"] == earlier and created(fake_vertex) == []  # adopted: no second job
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["region"] == OTHER
    assert outs["attempts"] == [{**outs["placement"], "job_name": earlier, "state": "JOB_STATE_SUCCEEDED",
                                 "reason": ""}]  # fmt: skip
    lists = [r.parent for m, r in fake_vertex.calls if m == "ListCustomJobs"]
    assert lists == [HOME_PARENT, OTHER_PARENT]  # looked in every region of the chain, home first


class Passes:
    """A deadline whose clock only its sleep moves; each sleep (a gap between passes) may free capacity."""

    def __init__(self, fake: FakeJobService, free_after: int | None) -> None:
        self.fake, self.free_after = fake, free_after
        self.now, self.sleeps = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if len(self.sleeps) == self.free_after:
            self.fake.capacity.clear()  # machines free up during this gap

    def of(self, props, **_kwargs) -> attempts.Deadline:
        seconds = props.capacity_deadline_seconds
        return attempts.Deadline(seconds, clock=lambda: self.now, sleep=self.sleep, draw=lambda lo, hi: 1.0)


@pytest.fixture
def guarded_vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeJobService, list[list[str]]]]:
    """The fake JobService, where every CreateCustomJob first records the live jobs with the new job's key in
    any region (never two live jobs: each list must be empty)."""
    fake = FakeJobService()
    seen: list[list[str]] = []
    create = fake._create

    def guarded(request):
        seen.append(live(fake, request.custom_job.labels[KEY_LABEL]))
        return create(request)

    fake._create = guarded  # before start(): handler() serves this one
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", fake.start())
    yield fake, seen
    fake.stop()


def stock_out_everywhere(fake: FakeJobService) -> None:
    for region in (REGION, OTHER):
        fake.capacity[(region, *T4_SPOT)] = STOCKOUT


def test_a_pass_that_found_nothing_is_retried_until_machines_free_up_with_never_two_live_jobs(
    guarded_vertex, monkeypatch, capsys
):
    fake, seen = guarded_vertex
    stock_out_everywhere(fake)
    passes = Passes(fake, free_after=2)  # two passes find nothing; the third finds machines at home
    monkeypatch.setattr(attempts.Deadline, "of", passes.of)
    outs = CustomJobProvider().create(checked(fallbacks=[], capacity_deadline_seconds=900)).outs
    assert outs["state"] == "JOB_STATE_SUCCEEDED" and outs["placement"]["region"] == REGION
    assert [r.parent for r in created(fake)] == [HOME_PARENT, OTHER_PARENT] * 2 + [HOME_PARENT]
    assert seen == [[]] * 5  # no other job with the key was live, in any region, at any create
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED"] * 4 + ["JOB_STATE_SUCCEEDED"]
    assert passes.sleeps == pytest.approx([60.0, 96.0])  # placement's backoff, without jitter
    err = capsys.readouterr().err
    assert [line.split("] ", 1)[1] for line in err.splitlines() if "] pass " in line] == [
        f"pass {n}: all 2 shapes gave way; trying the chain again in {gap}s ({left}s left of "
        "capacity_deadline_seconds)"
        for n, gap, left in ((1, 60, 900), (2, 96, 840))
    ]


def test_a_deadline_that_runs_out_counts_the_passes_in_the_final_paragraph(guarded_vertex, monkeypatch):
    fake, seen = guarded_vertex
    stock_out_everywhere(fake)
    passes = Passes(fake, free_after=None)
    monkeypatch.setattr(attempts.Deadline, "of", passes.of)
    with pytest.raises(JobError) as raised:
        CustomJobProvider().create(checked(fallbacks=[], capacity_deadline_seconds=900))
    # Gaps 60, 96, 153.6, 245.76, 300 s fit in 900 s (a pass takes no time on this clock); a sixth does not.
    assert passes.sleeps == pytest.approx([60.0, 96.0, 153.6, 245.76, 300.0])
    assert len(created(fake)) == 2 * 6 and seen == [[]] * 12
    message = str(raised.value)
    assert "6 passes round the chain were made before capacity_deadline_seconds 900 ran out" in message
    assert f"could not get machines in {REGION}, {OTHER}" in message and "\n" not in message
    assert all(job.state in TERMINAL for job in fake.jobs.values())  # nothing left running


def test_a_spot_job_it_created_is_cancelled_at_the_on_demand_bound(fake_vertex, monkeypatch, capsys):
    """No Spot price without the catalog: the running Spot job's cost counts at the on-demand price of the
    same shape (n1-standard-8 + T4 in us-central1, the cited table), shown as "at most"."""
    # The wait loop looks at a queued capped job every minute; here the job starts at once and its cap is
    # reached within a second of running, so it looks again sooner.
    monkeypatch.setattr(cost_cap, "QUEUED_RECHECK_SECONDS", 0.1)
    fake_vertex.outcome = JobState.JOB_STATE_RUNNING  # once running, it runs until something stops it
    cap = 0.0001  # reached after 0.43 s of running at USD 0.84/h
    outs = (
        CustomJobProvider()
        .create(checked(fallbacks=[], fallback_regions=[], max_cost_usd=cap, poll_interval_seconds=0.05))
        .outs
    )
    (request,) = created(fake_vertex)
    assert shape_of(request.custom_job) == T4_SPOT
    assert fake_vertex.jobs[outs["job_name"]].state == JobState.JOB_STATE_CANCELLED
    assert outs["state"] == "JOB_STATE_CANCELLED" and outs["cost_cap_reached"] is True
    assert outs["estimated_cost_bound"] is True and outs["estimated_cost_usd"] >= cap
    assert "reached max_cost_usd" in outs["error"] and "at most USD" in outs["error"]
    assert "(on-demand price; Spot is billed below it" in outs["error"]
    closing = provider_lines(capsys.readouterr().err)[-1]
    assert "JOB_STATE_CANCELLED after" in closing and "estimated cost at most USD" in closing
    assert "Spot is billed below it" in closing
