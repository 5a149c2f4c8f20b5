"""Every wording of the error classifier's table (infra/vertex/lifecycle/error_classes.py) that means "no
machines" moves a training job and a study alike to their next shape, and ends both, when none is left, with
the capacity paragraph: the real JobServiceClient and CloudQuotasClient against the fakes, which send each
wording."""

from collections.abc import Iterator

import pytest

from infra.vertex.lifecycle.error_classes import WORDINGS, Outcome, Wording, classify, quota_names
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.provider import CustomJobProvider
from infra.vertex.tuning_provider import TuningJobProvider
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.vertex import STOCKOUT, STOCKOUT_MESSAGE
from tests.fakes.vertex_tuning import FakeTuningJobService
from tests.vertex.props import REGION, job_props, pool
from tests.vertex.tuning_props import tuning_props

NO_MACHINES = [w for w in WORDINGS if w.outcome is not Outcome.OTHER]
T4 = ("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD")
L4 = ("g2-standard-8", "NVIDIA_L4", "STANDARD")
FALLBACK = [{"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4"}]
PARAMETERS = [{"parameter_id": "learning-rate", "type": "DISCRETE", "values": [0.01, 0.001]}]


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTuningJobService]:
    service, quotas = FakeTuningJobService(), FakeCloudQuotas()
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", service.start(quotas.handler()))
    service.capacity.update({T4: STOCKOUT, L4: STOCKOUT})
    yield service
    service.stop()


def test_every_row_classifies_its_own_sample_and_names_a_source() -> None:
    for wording in WORDINGS:
        assert classify(wording.sample) is wording.outcome, wording.sample
        assert wording.source.strip(), wording.pattern
    assert classify(STOCKOUT_MESSAGE.format(region=REGION)) is Outcome.NO_CAPACITY  # what the fake sends
    assert classify("The replica workerpool0-0 exited with a non-zero status of 1") is Outcome.OTHER
    assert quota_names(NO_MACHINES[0].sample) == [
        "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
    ]


def _ids(wording: Wording) -> str:
    return f"{wording.outcome.name}:{wording.pattern[:24]}"


def _paragraph(error: JobError, kind: str, sample: str) -> None:
    text = str(error)
    assert f"{kind} " in text and "could not get machines in us-central1: every shape was tried" in text
    assert text.count(" ".join(sample.split())) == 2  # both shapes' attempts, with the wording each ended on
    assert "custom_model_training quotas" in text  # what to do


@pytest.mark.parametrize("wording", NO_MACHINES, ids=_ids)
def test_a_training_job_gives_way_on_every_wording(jobs: FakeTuningJobService, wording: Wording) -> None:
    jobs.stockout_message = wording.sample
    provider = CustomJobProvider()
    checked = provider.check({}, job_props(worker_pools=[pool()], fallbacks=FALLBACK))
    assert checked.failures == []
    with pytest.raises(JobError) as raised:
        provider.create(checked.inputs)
    _paragraph(raised.value, "Training job", wording.sample)
    assert len(jobs.jobs) == 2  # one job per shape, no resubmission of a stocked-out shape


@pytest.mark.parametrize("wording", NO_MACHINES, ids=_ids)
def test_a_study_gives_way_on_every_wording(jobs: FakeTuningJobService, wording: Wording) -> None:
    jobs.stockout_message = wording.sample
    provider = TuningJobProvider()
    props = tuning_props(algorithm="grid", parameters=PARAMETERS, worker_pools=[pool()], fallbacks=FALLBACK)
    checked = provider.check({}, props)
    assert checked.failures == []
    with pytest.raises(JobError) as raised:
        provider.create(checked.inputs)
    _paragraph(raised.value, "Tuning job", wording.sample)
    assert len(jobs.tuning_jobs) == 2
