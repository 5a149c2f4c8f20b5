"""The dynamic provider of every Vertex job kind: create-or-adopt, read, update, delete through one lifecycle.

A kind's provider (infra/vertex/provider.py, tuning_provider.py, batch_provider.py) is this class with its
`kind` set; those
modules are pickled by reference into stacks' state, so they keep their paths and class names.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from infra.dynamic.base import SpecProvider
from infra.vertex.capacity import placement
from infra.vertex.cost import cap as cost_cap
from infra.vertex.cost import spend
from infra.vertex.lifecycle import attempts, placing, run_record, waiting
from infra.vertex.lifecycle.attempts import AttemptRecord, carried_attempts, current_record
from infra.vertex.lifecycle.errors import JobError
from infra.vertex.lifecycle.kind import JobKind
from infra.vertex.lifecycle.status import JobStatus


class JobProvider(SpecProvider):
    """Create/read/update/delete one job of `kind` from its snake_case props."""

    kind: ClassVar[JobKind]
    delete_before_replace = True  # two runs of one job would race on one output directory and double the bill

    @property
    def spec(self) -> Any:  # type: ignore[override]
        return self.kind.spec

    @property
    def fixed_inputs(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.kind.fixed_at_submit

    def log_name(self, props: dict[str, Any]) -> str:
        return str(props.get("display_name", self.kind.noun.lower()))

    def preview_lines(self, props: dict[str, Any]) -> list[str]:
        return self.kind.preview_lines(props)

    def replaces(self, olds: dict[str, Any], news: dict[str, Any], changed: list[str]) -> list[str]:
        return super().replaces(olds, news, changed) + self.kind.replaces(olds, changed)

    def replacing(self, olds: dict[str, Any], news: dict[str, Any]) -> None:
        for line in self.kind.replace_lines(olds):
            self.log(news, line)

    def outputs(
        self,
        props: dict[str, Any],
        status: JobStatus,
        records: list[AttemptRecord] | None = None,
        stored: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Complete outputs; `records` are the attempts this call saw, else `stored` (the outputs an earlier
        call saved: read and update) carries the earlier attempts over."""
        current = current_record(props, status)
        attempts = [r.as_output() for r in records] if records else carried_attempts(stored or {}, current)
        shaped = placement.apply_shape(props, current.shape)
        return {
            **{k: props[k] for k in self.kind.spec.INPUTS if k in props},
            "job_name": status.name,
            "state": status.state,
            "console_url": status.console_url,
            "create_time": status.create_time,
            "start_time": status.start_time,
            "end_time": status.end_time,
            "error": status.error,
            "placement": current.shape.as_dict(),
            "attempts": attempts,
            **self.kind.outputs(props, shaped, status, lambda line: self.log(props, line)),
        }

    def _finished(self, props: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs of a job that was waited for, announced in one summary line and recorded."""
        self.log(props, self.kind.summary(outputs))
        self._ended(props, outputs)
        return outputs

    def _ended(self, props: dict[str, Any], outputs: dict[str, Any]) -> None:
        """A job ended: its run.json (run_record.py), then what its kind does at the end."""
        say = lambda line: self.log(props, line)  # noqa: E731
        run_record.keep(outputs, say, self.kind.record_kind, self.kind.output_dir(outputs))
        self.kind.ended(outputs, say)

    def _adoptable(self, props: dict[str, Any]) -> JobStatus | None:
        """The job an interrupted `pulumi up` started with these inputs, in any region of the chain."""
        key = self.kind.spec.job_key(props)
        regions = placement.regions(props) if props.get("runner") == "vertex" else [props.get("region")]
        for region in regions:
            found = self.kind.runner({**props, "region": region}).find_by_key(key)
            if found is not None:
                return found
        return None

    def _runner_of(self, props: dict[str, Any], name: str) -> Any:
        """The runner for an existing job: in the region its resource name says (it may have moved)."""
        return self.kind.runner(placement.in_job_region(props, name))

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = self.kind.spec.with_defaults(props)
        say = lambda line: self.log(props, line)  # noqa: E731
        adopted = self._adoptable(props)
        if adopted is not None:
            say(f"adopting {adopted.name} ({adopted.state}), started earlier with the same inputs")
            shaped = placement.apply_shape(props, attempts.job_shape(adopted, props)[1])
            note = cost_cap.submit_note(shaped, spend.Carried.of(adopted))
            if note:
                say(note)
        try:
            status, records = placing.place(self.kind, props, adopted, say)
        except JobError as exc:
            if props["wait"] and exc.status is not None:
                self._ended(props, {**self.outputs(props, exc.status, exc.records), "error": str(exc)})
            raise
        outputs = self.outputs(props, status, records)
        return CreateResult(status.name, self._finished(props, outputs) if props["wait"] else outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = self.kind.spec.with_defaults(props)
        status = self._runner_of(props, id_).get(id_)
        if status is None:
            return ReadResult("", {})
        return ReadResult(id_, self.outputs(props, status, stored=props))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        props = self.kind.spec.with_defaults(news)
        for key in self.kind.fixed_at_submit:  # what the running job was submitted with, not the new value
            props.pop(key, None)
            if olds.get(key) is not None:
                props[key] = olds[key]
        runner = self._runner_of(props, id_)
        status = runner.get(id_)
        if status is None:
            raise JobError(
                f"{self.kind.noun} {id_} no longer exists; run `pulumi refresh`, then `pulumi up` to run it "
                "again."
            )
        if not props["wait"]:
            return UpdateResult(self.outputs(props, status, stored=olds))
        # An update cannot change the resource's id, so it cannot move to a new attempt: it reports, waited
        # for under the rules of the shape it runs on (a FLEX_START fallback: max_wait_seconds).
        shaped = placement.apply_shape(props, attempts.job_shape(status, props)[1])
        try:
            status = waiting.wait(self.kind, runner, status, shaped, lambda line: self.log(props, line))
        except JobError as exc:
            if exc.status is not None:
                self._ended(props, {**self.outputs(props, exc.status, stored=olds), "error": str(exc)})
            raise
        return UpdateResult(self._finished(props, self.outputs(props, status, stored=olds)))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        props = self.kind.spec.with_defaults(props)
        waiting.stop_and_delete(self._runner_of(props, id_), id_, props, lambda line: self.log(props, line))
