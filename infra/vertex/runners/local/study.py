"""One study's trials on this machine as Vertex runs them, each a local CustomJob, run as the one replica of a
local job: python -m infra.vertex.runners.local.study <base output dir> <HyperparameterTuningJob as JSON>"""

from __future__ import annotations

import json
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from google.cloud import aiplatform_v1

from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.status import JobStatus, now
from infra.vertex.runners.local import search
from infra.vertex.runners.local.runner import LocalRunner
from infra.vertex.runners.local.supervisor import KILL_GRACE_SECONDS, write_json
from infra.vertex.runners.trials import Trial, trial_line

POLL_SECONDS = 0.2
# A cancelled trial's supervisor gives its replicas KILL_GRACE_SECONDS after SIGTERM before SIGKILL; the study
# waits that and a margin for each trial to say it ended.
CANCEL_WAIT_SECONDS = KILL_GRACE_SECONDS + 10.0
TRIALS_FILE = "trials.json"
# cloudml-hypertune's file format (JSON lines, one per report), each trial's own file named by
# CLOUD_ML_HP_METRIC_FILE (the library's override of /tmp/hypertune/output.metrics): parallel trials stay
# apart.
METRIC_FILE = "hypertune/output.metrics"


# A trial's base_output_dir, so AIP_MODEL_DIR is <base>/<trial id>/model/ as on Vertex
# (aiplatform_v1 CustomJobSpec.base_output_directory: "For CustomJob backing a Trial of
# HyperparameterTuningJob: AIP_MODEL_DIR = <base_output_directory>/<trial_id>/model/").
def trial_base(base: str, trial_id: str) -> str:
    return f"{base.rstrip('/')}/{trial_id}"


def trial_job(
    study: aiplatform_v1.HyperparameterTuningJob, trial_id: str, point: search.Point, base: str
) -> aiplatform_v1.CustomJob:
    """The CustomJob of one trial: the study's trial job spec with the trial's flags and output dir."""
    into = trial_base(base, trial_id)
    job_spec = aiplatform_v1.CustomJobSpec(study.trial_job_spec)
    job_spec.base_output_directory = aiplatform_v1.GcsDestination(output_uri_prefix=into)
    env = [
        aiplatform_v1.EnvVar(name="CLOUD_ML_TRIAL_ID", value=trial_id),
        aiplatform_v1.EnvVar(name="CLOUD_ML_HP_METRIC_FILE", value=f"{into}/{METRIC_FILE}"),
    ]
    for pool in job_spec.worker_pool_specs:
        # How Vertex hands a trial its parameters: `--<parameter_id>=<value>` each.
        pool.container_spec.args.extend(f"--{k}={v}" for k, v in point.items())
        pool.container_spec.env.extend(env)
    return aiplatform_v1.CustomJob(display_name=f"{study.display_name}-trial-{trial_id}", job_spec=job_spec)


def reported_metric(path: Path, metric_id: str) -> float | None:
    """The last value reported for `metric_id` in a cloudml-hypertune metrics file, or None: the trial's final
    measurement (Vertex's default measurement selection, LAST_MEASUREMENT)."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    values = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and metric_id in entry:
            values.append(float(entry[metric_id]))
    return values[-1] if values else None


def finished_trial(trial: Trial, job: JobStatus, base: str, metric_id: str) -> Trial:
    """A trial whose CustomJob ended: SUCCEEDED with its metric, else INFEASIBLE with the reason."""
    metric = reported_metric(Path(trial_base(base, trial.id)) / METRIC_FILE, metric_id)
    reason = ""
    if job.state != "JOB_STATE_SUCCEEDED":
        reason = f"trial job {job.state}: {_error_summary(job.error)}"
    elif metric is None:
        reason = f"the trial reported no {metric_id} (cloudml-hypertune metrics file)"
    state = "INFEASIBLE" if reason else "SUCCEEDED"
    return replace(trial, state=state, metric=metric, end_time=job.end_time or now(), reason=reason)


def _error_summary(error: str) -> str:
    """The local job's error in one line: its first line and the last line of the log tail it quotes."""
    lines = [line for line in error.splitlines() if line.strip()]
    if not lines:
        return "no error reported"
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1].strip()}"


class Study:
    """The study's loop: start trials up to the parallel count, collect finished ones, stop on failures."""

    def __init__(self, base: str, job: aiplatform_v1.HyperparameterTuningJob):
        self.base, self.job = base, job
        self.metric_id = job.study_spec.metrics[0].metric_id
        # Seeded by the study's key: the same inputs draw the same random trials.
        seed = int(job.labels.get(KEY_LABEL, "0")[:8] or "0", 16)
        self.pending = list(enumerate(search.suggestions(job.study_spec, job.max_trial_count, seed), 1))
        self.running: dict[str, tuple[Trial, str]] = {}
        self.done: list[Trial] = []
        self.error = ""
        self.stopped = False

    def trials(self) -> list[Trial]:
        return sorted([*self.done, *(t for t, _ in self.running.values())], key=lambda t: int(t.id))

    def write(self) -> None:
        record = {"trials": [t.to_output() for t in self.trials()], "error": self.error}
        write_json(Path(self.base) / TRIALS_FILE, record)

    def _runner(self, trial_id: str) -> LocalRunner:
        return LocalRunner(trial_base(self.base, trial_id))

    def start_trials(self) -> None:
        while self.pending and len(self.running) < self.job.parallel_trial_count:
            number, point = self.pending.pop(0)
            trial_id = str(number)
            # A trial counts only what it reports itself: not a file an earlier study left in this dir.
            (Path(trial_base(self.base, trial_id)) / METRIC_FILE).unlink(missing_ok=True)
            status = self._runner(trial_id).create(trial_job(self.job, trial_id, point, self.base))
            self.running[trial_id] = (Trial(trial_id, "ACTIVE", point, start_time=now()), status.name)

    def collect(self) -> None:
        for trial_id, (trial, name) in list(self.running.items()):
            status = self._runner(trial_id).get(name)
            if status is None or status.terminal:
                gone = JobStatus(name, "JOB_STATE_FAILED", "", "the trial's job records disappeared")
                ended = finished_trial(trial, status or gone, self.base, self.metric_id)
                print(trial_line(ended, self.metric_id), flush=True)
                self.done.append(ended)
                del self.running[trial_id]

    def failed_too_often(self) -> bool:
        failed = sum(t.state == "INFEASIBLE" for t in self.done)
        limit = self.job.max_failed_trial_count
        if limit and failed >= limit:
            self.error = f"{failed} trials failed, which reaches max_failed_trial_count {limit}"
            return True
        return False

    def cancel_running(self) -> None:
        """Cancels the running trials and waits (at most CANCEL_WAIT_SECONDS) until each has ended: a study
        that says it ended leaves no trial still stopping."""
        for trial_id, (_trial, name) in self.running.items():
            self._runner(trial_id).cancel(name)
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        while self.running and time.monotonic() < deadline:
            self.running = {
                trial_id: (trial, name)
                for trial_id, (trial, name) in self.running.items()
                if (status := self._runner(trial_id).get(name)) is not None and not status.terminal
            }
            if self.running:
                time.sleep(POLL_SECONDS)

    def run(self) -> int:
        """0 when the study ended with a best trial; 1 when it failed or was stopped."""
        while not self.stopped:
            self.start_trials()
            self.write()
            time.sleep(POLL_SECONDS)
            self.collect()
            if self.failed_too_often():
                break
            if not self.pending and not self.running:
                if not any(t.state == "SUCCEEDED" for t in self.done):
                    self.error = f"no trial succeeded with a reported {self.metric_id}"
                break
        self.cancel_running()
        self.write()
        if self.error:
            print(self.error, file=sys.stderr, flush=True)
        return 1 if self.error or self.stopped else 0


def main(argv: list[str]) -> int:
    base, text = argv
    study = Study(base, aiplatform_v1.HyperparameterTuningJob.from_json(text))

    def stop(_signum: int, _frame: object) -> None:
        study.stopped = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return study.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
