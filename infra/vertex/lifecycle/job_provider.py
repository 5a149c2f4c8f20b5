"""The dynamic provider of every job kind (provider.py, tuning_provider.py, batch_provider.py: pickled by
reference, `kind` set): the boundary, where props are parsed once and outputs made once from an Outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from infra.dynamic.base import SpecProvider
from infra.vertex.lifecycle import attempts, placing, run_record, spend, waiting
from infra.vertex.lifecycle import cap as cost_cap
from infra.vertex.lifecycle.attempts import AttemptRecord, carried_attempts, current_record
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.kind import Kind, Runner
from infra.vertex.lifecycle.outcome import Outcome
from infra.vertex.lifecycle.request import JobRequest, Placed
from infra.vertex.lifecycle.status import JobStatus
from infra.vertex.lifecycle.waiting import Say


class JobProvider(SpecProvider):
    """Create/read/update/delete one job of `kind` from its snake_case props."""

    kind: ClassVar[Kind[Any, Any]]
    delete_before_replace = True  # two runs of one job would race on one output directory and double the bill

    @property
    def spec(self) -> Any:  # type: ignore[override]
        return self.kind.spec

    @property
    def fixed_inputs(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.kind.fixed_at_submit

    def log_name(self, props: Mapping[str, Any]) -> str:
        return str(props.get("display_name", self.kind.noun.lower()))

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return self.kind.preview_lines(props)

    def replaces(self, olds: dict[str, Any], news: dict[str, Any], changed: list[str]) -> list[str]:
        return super().replaces(olds, news, changed) + self.kind.replaces(olds, changed)

    def replacing(self, olds: dict[str, Any], news: dict[str, Any]) -> None:
        for line in self.kind.replace_lines(olds):
            self.log(news, line)

    @staticmethod
    def _on_job(request: JobRequest, status: JobStatus, placed: Placed | None = None) -> Placed:
        """The request on the shape `status`'s job runs on: `placed` when it is that shape (the attempt that
        made the job), else placed there now (a job read, updated or adopted)."""
        index, shape = attempts.job_shape(status, request)
        return placed if placed is not None and placed.shape == shape else request.on(shape, index)

    def outcome(
        self,
        placed: Placed,
        status: JobStatus,
        records: list[AttemptRecord] | None = None,
        stored: dict[str, Any] | None = None,
    ) -> Outcome[Any]:
        """What the job `status` on `placed` (_on_job) ended with so far; `records`: the attempts this call
        saw, else `stored` (the outputs an earlier call saved: read and update) carries the earlier ones."""
        request = placed.request
        current = current_record(request, status)
        found = [r.as_output() for r in records] if records else carried_attempts(stored or {}, current)
        own = self.kind.outputs(placed, status, self._say(request))
        outcome = Outcome(
            inputs={k: request.props[k] for k in self.kind.spec.INPUTS if k in request.props},
            status=status,
            own=replace(own, cost_cap_reached=True) if cost_cap.stopped(placed, status) else own,
            placement=current.shape.as_dict(),
            attempts=tuple(found),
        )
        # The dollar cap's paragraph says more than the job's "cancelled".
        return outcome.failed(cost_cap.paragraph(placed, status)) if outcome.own.cost_cap_reached else outcome

    def _say(self, request: JobRequest) -> Say:
        return lambda line: self.log(request.props, line)

    def _finished(self, placed: Placed, outcome: Outcome[Any]) -> dict[str, Any]:
        """The outputs of a job that was waited for, announced in one summary line and recorded."""
        self._say(placed.request)(self.kind.summary(outcome, placed))
        self._ended(placed, outcome)
        return outcome.as_outputs()

    def _ended(self, placed: Placed, outcome: Outcome[Any]) -> None:
        """A job ended: its run.json (run_record.py), then what its kind does at the end."""
        say = self._say(placed.request)
        run_record.keep(outcome, say, self.kind, placed.request.common.output_dir)
        self.kind.ended(placed, outcome, say)

    def _adoptable(self, request: JobRequest) -> JobStatus | None:
        """The job an interrupted `pulumi up` started with these inputs, in any region of the chain."""
        for region in request.regions():
            found = self.kind.runner(request, region).find_by_key(request.key)
            if found is not None:
                return found
        return None

    def _runner_of(self, request: JobRequest, name: str) -> Runner:
        """The runner for an existing job: in the region its resource name says (it may have moved)."""
        return self.kind.runner(request, request.job_region(name))

    def create(self, props: dict[str, Any]) -> CreateResult:
        request = JobRequest.parse(self.kind, props)
        say = self._say(request)
        adopted = self._adoptable(request)
        if adopted is not None:
            say(f"adopting {adopted.name} ({adopted.state}), started earlier with the same inputs")
            note = cost_cap.submit_note(self._on_job(request, adopted), spend.Carried.of(adopted))
            if note:
                say(note)
        try:
            status, records, last = placing.place(self.kind, request, adopted, say)
        except JobError as exc:
            if request.wait and exc.status is not None:
                ran = self._on_job(request, exc.status)
                self._ended(ran, self.outcome(ran, exc.status, exc.records).failed(str(exc)))
            raise
        placed = self._on_job(request, status, last)
        outcome = self.outcome(placed, status, records)
        outputs = self._finished(placed, outcome) if request.wait else outcome.as_outputs()
        return CreateResult(status.name, outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        request = JobRequest.parse(self.kind, props)
        status = self._runner_of(request, id_).get(id_)
        if status is None:
            return ReadResult("", {})
        return ReadResult(id_, self.outcome(self._on_job(request, status), status, stored=props).as_outputs())

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # What the running job was submitted with (kind.fixed_at_submit) stays, not the new value.
        request = JobRequest.parse(self.kind, news, submitted=olds)
        runner = self._runner_of(request, id_)
        status = runner.get(id_)
        if status is None:
            raise JobError(
                f"{self.kind.noun} {id_} no longer exists; run `pulumi refresh`, then `pulumi up` to run it "
                "again."
            )
        placed = self._on_job(request, status)
        if not request.wait:
            return UpdateResult(self.outcome(placed, status, stored=olds).as_outputs())
        # An update cannot change the resource's id, so it cannot move to a new attempt: it reports, waited
        # for under the rules of the shape it runs on (a FLEX_START fallback: max_wait_seconds).
        try:
            status = waiting.wait(self.kind, runner, status, placed, self._say(request))
        except JobError as exc:
            if exc.status is not None:
                ran = self._on_job(request, exc.status, placed)
                self._ended(ran, self.outcome(ran, exc.status, stored=olds).failed(str(exc)))
            raise
        placed = self._on_job(request, status, placed)
        return UpdateResult(self._finished(placed, self.outcome(placed, status, stored=olds)))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        request = JobRequest.parse(self.kind, props)
        runner = self._runner_of(request, id_)
        waiting.stop_and_delete(runner, id_, request.poll_interval_seconds, self._say(request))
