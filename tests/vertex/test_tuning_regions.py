"""A study across regions through the same lifecycle as a training job: the real JobServiceClient against the
tuning fake, whose studies live per `projects/P/locations/R` parent and whose trials stock out per region."""

from collections.abc import Iterator

import pytest
from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.tuning import spec as tuning_spec
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.vertex import STOCKOUT, STOCKOUT_MESSAGE, TERMINAL, shape_of
from tests.fakes.vertex_tuning import FakeTuningJobService
from tests.stack.conftest import stack_config
from tests.vertex.props import PROJECT, REGION, pool, tuning_job_request
from tests.vertex.tuning_props import tuning_props

JobState = aiplatform_v1.JobState
OTHER = "us-east4"
HOME_PARENT = f"projects/{PROJECT}/locations/{REGION}"
OTHER_PARENT = f"projects/{PROJECT}/locations/{OTHER}"
GRID = [{"parameter_id": "learning-rate", "type": "DISCRETE", "values": [0.01, 0.001]}]
# Pulumi.dev.yaml's shape and chain: T4 Spot -> L4 Spot on g2 -> T4 on-demand.
DEV = stack_config("dev")
DEV_POOL = pool(machine_type=DEV.machine_type, accelerator_type=DEV.accelerator_type)
CHAIN = [dict(entry) for entry in DEV.capacity.fallbacks]
T4_SPOT = (DEV.machine_type, "NVIDIA_TESLA_T4", "SPOT")
HOME_SHAPES = [
    T4_SPOT,
    (CHAIN[0]["machine_type"], "NVIDIA_L4", "SPOT"),
    (DEV.machine_type, "NVIDIA_TESLA_T4", "STANDARD"),
]


@pytest.fixture
def tuning_vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTuningJobService]:
    jobs = FakeTuningJobService()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", jobs.start())
    yield jobs
    jobs.stop()


def props(**overrides) -> dict:
    study = {
        "algorithm": "grid",
        "parameters": GRID,
        "spot": True,
        "fallbacks": CHAIN,
        "worker_pools": [DEV_POOL],
    }
    checked = TuningJobProvider().check(
        {}, tuning_props(**{**study, "fallback_regions": [OTHER], **overrides})
    )
    assert checked.failures == []
    return checked.inputs


def submitted(jobs: FakeTuningJobService) -> list[aiplatform_v1.CreateHyperparameterTuningJobRequest]:
    return [r for m, r in jobs.calls if m == "CreateHyperparameterTuningJob"]


def trial_shape(study: aiplatform_v1.HyperparameterTuningJob) -> tuple[str, str, str]:
    return shape_of(aiplatform_v1.CustomJob(job_spec=study.trial_job_spec))


def test_a_study_whose_trials_stock_out_at_home_moves_to_the_next_region(tuning_vertex, capsys):
    for shape in HOME_SHAPES:
        tuning_vertex.capacity[(REGION, *shape)] = STOCKOUT
    inputs = props(poll_interval_seconds=0.05)
    outs = TuningJobProvider().create(inputs).outs

    requests = submitted(tuning_vertex)
    assert [(r.parent, trial_shape(r.hyperparameter_tuning_job)) for r in requests] == [
        *((HOME_PARENT, shape) for shape in HOME_SHAPES),
        (OTHER_PARENT, T4_SPOT),
    ]
    home = requests[0].hyperparameter_tuning_job
    assert outs["job_name"].startswith(OTHER_PARENT + "/hyperparameterTuningJobs/")
    stored = tuning_vertex.tuning_jobs[outs["job_name"]]
    # The same trials: image, args, service account and output directory, and the same key label.
    ran, first = stored.trial_job_spec, home.trial_job_spec
    assert ran.worker_pool_specs[0].container_spec == first.worker_pool_specs[0].container_spec
    assert ran.worker_pool_specs[0].container_spec.image_uri == DEV_POOL["image_uri"]
    assert ran.service_account == first.service_account == inputs["service_account"]
    assert ran.base_output_directory == first.base_output_directory
    assert stored.labels[KEY_LABEL] == home.labels[KEY_LABEL]

    assert outs["state"] == "JOB_STATE_SUCCEEDED" and len(outs["trials"]) == 2
    assert outs["placement"]["region"] == OTHER and outs["placement"]["scheduling_strategy"] == "SPOT"
    assert [(a["region"], a["state"]) for a in outs["attempts"]] == [
        *((REGION, "JOB_STATE_FAILED") for _ in HOME_SHAPES),
        (OTHER, "JOB_STATE_SUCCEEDED"),
    ]
    assert STOCKOUT_MESSAGE.format(region=REGION) in outs["attempts"][0]["reason"]
    err = capsys.readouterr().err
    t4 = f"{DEV.machine_type} + 1 x NVIDIA_TESLA_T4"
    (across,) = [line for line in err.splitlines() if f"leaving {t4} (STANDARD) in {REGION}: " in line]
    assert across.endswith(f"; trying next: {t4} (SPOT) in {OTHER}")

    # A later refresh reads it in us-east4; destroy deletes it there.
    read = TuningJobProvider().read(outs["job_name"], outs).outs
    assert read["state"] == "JOB_STATE_SUCCEEDED" and read["placement"] == outs["placement"]
    assert f"locations/{OTHER}/" in read["console_url"]
    TuningJobProvider().delete(outs["job_name"], read)
    assert outs["job_name"] not in tuning_vertex.tuning_jobs


def test_an_interrupted_create_adopts_the_live_study_in_the_fallback_region(tuning_vertex):
    inputs = tuning_spec.with_defaults(props())
    earlier = tuning_vertex.add_study(OTHER_PARENT, tuning_job_request(inputs, 3))
    outs = TuningJobProvider().create(props()).outs
    assert outs["job_name"] == earlier and submitted(tuning_vertex) == []
    assert outs["placement"]["region"] == OTHER and outs["state"] == "JOB_STATE_SUCCEEDED"
    assert all(job.state in TERMINAL for job in tuning_vertex.tuning_jobs.values())
    lists = [r.parent for m, r in tuning_vertex.calls if m == "ListHyperparameterTuningJobs"]
    assert lists == [HOME_PARENT, OTHER_PARENT]
