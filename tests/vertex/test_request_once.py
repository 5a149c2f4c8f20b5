"""One request, parsed once (issue 39): a create parses its props into one JobRequest, computes the chain of
shapes once, and places the request on each shape it tries exactly once per attempt (request.on), whatever
the lifecycle, the kind, the quota check and the dollar cap read of it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from infra.vertex.batch.kind import BATCH_PREDICTION_JOB
from infra.vertex.capacity import placement
from infra.vertex.cost import limits
from infra.vertex.custom_job import spec
from infra.vertex.custom_job.kind import CUSTOM_JOB
from infra.vertex.lifecycle import restarts, spend
from infra.vertex.lifecycle.request import JobRequest
from infra.vertex.provider import CustomJobProvider
from tests.fakes.vertex import STOCKOUT
from tests.vertex.batch_props import batch_props
from tests.vertex.props import job_props, pool

T4_STANDARD = ("n1-standard-8", "NVIDIA_TESLA_T4", "STANDARD")
DERIVATIONS = ("shapes", "chain_of", "primary_shape", "resolve", "pools")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each derivation of a shaped request runs (placement.py's, wherever it is called from), and
    how often props are parsed ("parse")."""
    calls: Counter[str] = Counter()
    # The kind's typed body (spec.body) and each shape's hourly ceiling (limits.ceiling_of) are parsed with
    # the request too; a body put on a shape (Training.on) is the attempt's whole request on it.
    derived = [*((placement, name) for name in DERIVATIONS), (spec, "body"), (limits, "ceiling_of")]
    for module, name in [*derived, (spec.Training, "on")]:
        real = getattr(module, name)

        def counting(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)
    real_parse = JobRequest.parse.__func__  # type: ignore[attr-defined]

    def parse(cls: type[JobRequest], *args: Any, **kwargs: Any) -> JobRequest:
        calls["parse"] += 1
        return real_parse(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(JobRequest, "parse", classmethod(parse))
    return calls


def test_a_job_with_one_fallback_derives_its_shaped_request_once_per_attempt(fake_google, counted):
    """The primary stocks out, the fallback runs: two attempts, two placed requests, one chain, one parse."""
    fake_google.jobs.capacity[T4_STANDARD] = STOCKOUT
    provider = CustomJobProvider()
    props = provider.check({}, job_props(fallbacks=[{"machine_type": "n1-standard-16"}])).inputs
    counted.clear()
    outs = provider.create(props).outs
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert counted["parse"] == 1 and counted["body"] == 1, counted
    assert counted["chain_of"] == 1 and counted["shapes"] == 0, counted  # from the typed request
    assert counted["resolve"] == 1  # the one fallback, resolved once
    assert counted["on"] == 2  # the request on its shape, once per attempt
    # The machines are never read from the props again: the request's pools are its body's, and each placed
    # request puts its body on its shape.
    assert counted["pools"] == 0 and counted["primary_shape"] == 0


def test_read_and_delete_parse_once_and_place_the_job_once(fake_google, counted):
    provider = CustomJobProvider()
    outs = provider.create(provider.check({}, job_props(wait=False)).inputs).outs
    counted.clear()
    provider.read(outs["job_name"], outs)
    # Read submits nothing: the request is placed once, on the job's own shape (whose machines it prices).
    assert counted["parse"] == 1 and counted["on"] == 1, counted
    counted.clear()
    provider.delete(outs["job_name"], outs)
    # A delete needs neither the chain nor a shape: it cancels and deletes the job its id names.
    assert counted["parse"] == 1 and counted["shapes"] == 0 and counted["on"] == 0, counted


def test_each_shapes_hourly_ceiling_is_read_once_whatever_the_attempts(fake_google, counted):
    """max_hourly_usd: the ceiling of each shape of the chain is found once (JobRequest.ceilings), not once
    per attempt and per check of the price limits."""
    fake_google.jobs.capacity[T4_STANDARD] = STOCKOUT
    provider = CustomJobProvider()
    fallbacks = [{"machine_type": "n1-standard-16", "max_hourly_usd": 40}]
    props = provider.check({}, job_props(fallbacks=fallbacks, max_hourly_usd=30)).inputs
    counted.clear()
    outs = provider.create(props).outs
    assert [a["state"] for a in outs["attempts"]] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    assert counted["ceiling_of"] == 2 and counted["parse"] == 1, counted  # two shapes, one each


CPU_WORKERS = pool(machine_type="n1-standard-4", accelerator_type=None, accelerator_count=0, replica_count=2)
TRAINING_FALLBACKS = [
    {"machine_type": "n1-standard-16", "accelerator_count": 0},
    {"accelerator_type": "NVIDIA_L4", "machine_type": "g2-standard-8", "scheduling_strategy": "SPOT"},
]
T4 = {"machine_type": "n1-standard-8", "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1}


@pytest.mark.parametrize(
    ("kind", "props"),
    [
        (
            CUSTOM_JOB,
            job_props(
                worker_pools=[pool(), CPU_WORKERS, pool(replica_count=3)],
                fallbacks=TRAINING_FALLBACKS,
                fallback_regions=["us-east4"],
            ),
        ),
        (BATCH_PREDICTION_JOB, batch_props(max_replica_count=3, fallbacks=[T4])),
    ],
)
def test_the_machines_an_attempt_prices_are_the_machines_it_submits(kind, props):
    """Placed.pools (what the price, the quota check and the cap read) equal the machines of the Vertex
    request the kind builds from the same placed body, on every shape of the chain: one shaping rule."""
    request = JobRequest.parse(kind, props)
    assert len(request.chain) >= 2
    for index, shape in enumerate(request.chain):
        placed = request.on(shape, index)
        job = kind.build(placed, restarts.Attempt(1, 0), spend.Carried(0, 0))
        if kind is CUSTOM_JOB:
            specs = [(p.machine_spec, p.replica_count) for p in job.job_spec.worker_pool_specs]
        else:
            resources = job.dedicated_resources
            specs = [(resources.machine_spec, resources.max_replica_count)]
        submitted = [
            (m.machine_type, m.accelerator_type.name if m.accelerator_count else None, m.accelerator_count, n)
            for m, n in specs
        ]
        priced = [
            (p.machine_type, p.accelerator_type, p.accelerator_count, p.replica_count) for p in placed.pools
        ]
        assert priced == submitted, shape
