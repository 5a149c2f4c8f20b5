"""A job kind the plan has never heard of appears in it as soon as a program declares one: a job is any
resource whose dynamic provider runs the shared job lifecycle, and its kind says its shapes and worst case."""

from __future__ import annotations

import pulumi.dynamic

from infra.plan.jobs import planned_jobs
from infra.plan.program import declared
from infra.vertex.cost import pricing
from infra.vertex.custom_job import spec as custom_job_spec
from infra.vertex.lifecycle.job_provider import JobProvider
from infra.vertex.lifecycle.kind import Kind
from tests.vertex.props import job_props, pool


class NewKind(Kind):
    """A kind that supplies only what differs (as a new kind would), stating no worst case of its own."""

    spec = custom_job_spec
    noun = "Scoring job"
    api_kind = "ScoringJob"
    output_key = "base_output_dir"


class NewKindProvider(JobProvider):
    kind = NewKind()


class NewKindJob(pulumi.dynamic.Resource, module="vertex", name="ScoringJob"):
    """Its resource, as each kind's resource module declares one."""


def test_a_new_kind_is_planned_with_its_shapes_in_order():
    props = job_props(
        worker_pools=[pool(machine_type="n1-standard-4")],
        fallbacks=[{"scheduling_strategy": "SPOT"}],
    )

    def program() -> None:
        NewKindJob(NewKindProvider(), "predict", dict(props))
        NewKindJob(NewKindProvider(), "predict-again", dict(props))

    pricing.Catalog.offline()
    try:
        jobs = planned_jobs(declared(program, "vertex-training", "dev"))
    finally:
        pricing.Catalog.forget()
    # Two jobs that depend on nothing register in whichever order their inputs resolve.
    assert sorted((job.name, job.kind) for job in jobs) == [
        ("predict", "ScoringJob"),
        ("predict-again", "ScoringJob"),
    ]
    prices = pricing.TABLE[("us-central1", "STANDARD")]
    on_demand = prices["n1-standard-4"] + prices["NVIDIA_TESLA_T4"]
    (job, _) = jobs
    assert [(s.name, s.scheduling_strategy, s.hourly_usd, s.bound) for s in job.shapes] == [
        ("shape", "STANDARD", on_demand, False),
        ("fallback 1", "SPOT", on_demand, True),
    ]
    assert job.worst_case_usd is None  # the kind states none: unknown, never guessed
    assert job.failures == ()
