"""What a Vertex job kind supplies to the one lifecycle (placing.py, waiting.py, job_provider.py), which does
the rest the same way for every kind. Modelled on python-aiplatform's `_Job` (google/cloud/aiplatform/jobs.py:
per-kind class attributes over one base) and Kubeflow's gcp_launcher job_remote_runner.py (one wait loop)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from infra.guard.job_kinds import JOB_KINDS
from infra.vertex.capacity.placement import Pool
from infra.vertex.cost import preview as cost_preview
from infra.vertex.lifecycle import restarts, spend
from infra.vertex.lifecycle.outcome import Outcome, OwnT
from infra.vertex.lifecycle.request import B, Body, JobRequest, Placed
from infra.vertex.lifecycle.status import JobStatus


class Runner(Protocol):
    """Where jobs of one kind run (Vertex AI or this machine): the five verbs the lifecycle uses."""

    def create(self, job: Any) -> JobStatus: ...
    def get(self, name: str) -> JobStatus | None: ...
    def find_by_key(self, key: str) -> JobStatus | None: ...
    def cancel(self, name: str) -> None: ...
    def delete(self, name: str) -> None: ...


class LocalRunnerClass(Protocol):
    """A runner class for `runner: local`: made with the job's output directory."""

    def __call__(self, base_output_dir: str, /) -> Runner: ...


class VertexRunnerClass(Protocol):
    """A runner class for Vertex AI: made with the project, the region and the first retry delay."""

    def __call__(self, project: str, region: str, first_retry_delay: float, /) -> Runner: ...


class Ticker(Protocol):
    """Told of every poll of a waited-for job: prints its log, heartbeat or finished trials."""

    def tick(self, status: JobStatus) -> None: ...


BodyT = TypeVar("BodyT", bound=Body)


class KindSpec(Protocol[BodyT]):
    """What a kind's spec module (custom_job/spec.py, ...) gives: inputs, defaults, checks and key over the
    engine's dict, its typed request (`body`) and its Vertex request (`build_job`); mypy checks them."""

    @property
    def INPUTS(self) -> tuple[str, ...]: ...
    @property
    def IN_PLACE_INPUTS(self) -> frozenset[str]: ...
    def with_defaults(self, props: Mapping[str, Any], /) -> dict[str, Any]: ...
    def validate(self, props: Mapping[str, Any], /) -> list[tuple[str, str]]: ...
    def job_key(self, props: Mapping[str, Any], /) -> str: ...
    def body(self, props: Mapping[str, Any], /) -> BodyT: ...
    def build_job(self, body: BodyT, key: str, /) -> Any: ...


class Kind(Generic[B, OwnT]):
    """One Vertex job kind over its body type `B` and own outputs' type `OwnT`: a subclass sets the class
    attributes, overrides the hooks that differ. (infra/guard/job_kinds.py's `JobKind` is another thing.)"""

    # An instance annotation, not ClassVar: a kind's class body assigns its spec module, which mypy checks
    # against KindSpec[B].
    spec: KindSpec[B]
    noun: ClassVar[str]  # how messages name a job of this kind: "Training job"
    api_kind: ClassVar[str]  # the Vertex resource: "CustomJob" (CreateCustomJob ...)
    record_kind: ClassVar[str]  # run.json's `kind`: "custom_job"
    record_outputs: ClassVar[tuple[str, ...]] = ()  # the kind's own outputs that its run.json keeps
    outputs_type: type[OwnT]  # what `outputs` makes (outcome.py Ran and the kind's fields)
    run_folder: ClassVar[str]  # where the stack writes this kind's runs under its output root (workloads/)
    # The prop that holds the job's own output directory: its local runner's records and its run.json go
    # there, never anywhere else.
    output_key: ClassVar[str]
    # The quotas capacity messages tell users to raise ("custom_model_training": aiplatform.googleapis.com/
    # custom_model_training_*); None: no documented quota id, so no pre-check and only the quotas page named.
    quota_family: ClassVar[str | None] = "custom_model_training"
    # A new attempt continues the same run from its checkpoints: its running time and cost carry over, and a
    # running job that Spot preemption ended is submitted again on its shape (restarts.py).
    resumable: ClassVar[bool] = False
    # Inputs that only describe how a job was submitted (a CustomJob's experiment link): a change applies to
    # the next job, never to the one that runs (which keeps its outputs, as its spec does).
    fixed_at_submit: ClassVar[tuple[str, ...]] = ()
    # Where jobs of this kind run: `runner: local` (a base output dir) or Vertex AI (project, region, delay).
    local_runner: ClassVar[LocalRunnerClass]
    vertex_runner: ClassVar[VertexRunnerClass]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not isinstance(getattr(cls, "output_key", None), str) or not cls.output_key:
            raise TypeError(f"{cls.__name__} must name its output location (output_key): run.json goes there")

    @property
    def input_names(self) -> tuple[str, ...]:
        return self.spec.INPUTS

    @property
    def collection(self) -> str:
        """The REST collection and IAM permission stem (aiplatform.customJobs.create), from infra/guard's
        table of kinds (what the kill switch cancels), which names every kind's API resource."""
        return next(row.collection for row in JOB_KINDS if row.name == self.api_kind)

    def output_dir(self, props: Mapping[str, Any]) -> str:
        """The job's own output directory (local path or gs://): where its run.json is written."""
        return str(props.get(self.output_key) or "")

    def quota_words(self) -> str:
        """How capacity messages name the quotas to raise."""
        if self.quota_family is None:
            return "the project's Vertex AI quotas for these machines"
        return f"the {self.quota_family} quotas"

    def runner(self, request: JobRequest[B], region: str | None = None) -> Runner:
        """Made fresh for every provider call (never stored on the provider), in `region` (default: home)."""
        if request.runner == "local":
            return self.local_runner(request.common.output_dir)
        first_retry_delay = min(request.poll_interval_seconds, 1.0)
        return self.vertex_runner(request.project or "", region or request.home, first_retry_delay)

    def build(self, placed: Placed[B], attempt: restarts.Attempt, carried: spend.Carried) -> Any:
        """The request that submits the job on its shape: the spec's build_job over the placed body and the
        key (`attempt` and `carried`: what a resumable kind labels a resubmission with)."""
        return self.spec.build_job(placed.body, placed.request.key)

    def ticker(self, placed: Placed[B], status: JobStatus, say: Callable[[str], None]) -> Ticker | None:
        return None

    def run_deadline(self, status: JobStatus, placed: Placed[B]) -> float | None:
        """Wall-clock time after which a job that runs has overrun; None before it is known, or never (a
        kind without a running-time cap)."""
        raise NotImplementedError

    def overrun_limit(self, placed: Placed[B]) -> str:
        """The running-time limit a cancelled overrun went past, as a message names it."""
        raise NotImplementedError

    def ended_reason(self, status: JobStatus) -> str:
        """Why a job that did not succeed ended, for its attempt record."""
        return status.error or status.state

    def failure_details(self, status: JobStatus) -> str:
        """More about a failure than the job's error (a study's failed trials); '' or '. ...'."""
        return ""

    def gave_way_as_a_whole(self, status: JobStatus) -> bool:
        """The kind's own sign that the job could not get machines, beside the job's error (trials)."""
        return False

    def capacity_advice(self, request: JobRequest[B]) -> str | None:
        """What to do when every shape gave way (None: a training job's options: quotas, Spot, FLEX_START,
        regions, reservations)."""
        return None

    def quota_pools(self, placed: Placed[B]) -> tuple[Pool, ...] | None:
        """The pools that must fit in quota at once (a study: its parallel trials); None: the kind has no
        documented quota ids, so no pre-check (quota_family None)."""
        return placed.pools if self.quota_family is not None else None

    def outputs(self, placed: Placed[B], status: JobStatus, say: Callable[[str], None]) -> OwnT:
        """The kind's outputs beside the shared ones (job_name, state, times, placement, attempts)."""
        raise NotImplementedError

    def summary(self, outcome: Outcome[OwnT], placed: Placed[B]) -> str:
        """The one line that ends a wait (`placed`: the request on the shape the job ran on)."""
        raise NotImplementedError

    def before_submit(self, placed: Placed[B], say: Callable[[str], None]) -> None:
        """What must exist before a job on these props is submitted (a CustomJob's experiment run)."""

    def ended(self, placed: Placed[B], outcome: Outcome[OwnT], say: Callable[[str], None]) -> None:
        """Told of every job that ended (on `placed`, with its outcome), after its run.json is written."""

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return []

    def shape_costs(self, props: dict[str, Any]) -> list[cost_preview.ShapeCost]:
        """Each shape a job may run on, in the order tried, with its hourly figure (`python -m infra.plan`);
        every kind is placed by the one lifecycle, so its shapes are the placement's."""
        return cost_preview.shape_costs(props)

    def worst_case_usd(self, props: dict[str, Any]) -> float | None:
        """The most one job of this kind may cost at list prices; None: unknown, or not stated by the kind."""
        return None

    def replaces(self, olds: dict[str, Any], changed: list[str]) -> list[str]:
        """Inputs that need a new job though they change in place otherwise."""
        return []

    def replace_lines(self, olds: dict[str, Any]) -> list[str]:
        """What diff says when the job is replaced."""
        return []
