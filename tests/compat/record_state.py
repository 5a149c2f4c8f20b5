"""Records the state this commit's providers store, for tests/compat/test_stored_state.py.

Run once at the commit whose state is recorded; the output is committed:

    .venv/bin/python -m tests.compat.record_state      # writes tests/compat/state-<short commit>.json
    .venv/bin/python -m tests.compat.record_state deployment   # only the cases named (a newer resource)

An earlier commit is recorded in a checkout of it (`git worktree add /tmp/rec-<commit> <commit>`, `make setup`
there: its own venv imports its own infra), with this folder's cases.py, services.py and record_state.py
copied in (cases.py builds each resource as that checkout's stack did); the file it writes is copied back.

It does what `pulumi up` does for each case of cases.py: the real dynamic-provider host, started as the engine
starts it, gets the SDK-serialized inputs through Check then Create, against the fake Google services (all on
one port, VERTEX_AI_EMULATOR_HOST). Stored per resource: the checked inputs and the create response's id and
properties (what the engine writes to the stack's state, `__provider` blob included), the service-side
objects the fakes then held (so the test can put them back), and for a local job the files the local runner
wrote under base_output_dir (a batch job's: output_dir; its record on disk), with the case's directory as
{BASE} and the repository as {ROOT}. A local batch job runs this checkout's own prediction code on a tiny
model this checkout's trainer exports (not stored: the job's input, as its images are).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from google.cloud import aiplatform_v1

from tests.compat.cases import (
    BASE,
    BATCH_JOB,
    CASES,
    LOCAL_RECORDS,
    ROOT,
    STOCKED_OUT,
    TUNING_JOB,
    Case,
    files_under,
    record_dir,
    rewrite,
    to_json,
)
from tests.compat.services import Fakes
from tests.engine.host import ROOT as REPO
from tests.engine.host import ProviderHost, this_project
from tests.fakes.vertex import STOCKOUT

HERE = Path(__file__).parent
NO_CREDENTIALS = "/nonexistent/no-credentials-in-tests.json"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _wait_running(base: Path, job_name: str, study: bool, seconds: float = 60) -> None:
    """Until the local supervisor runs the replicas (a study: until its first trial runs too)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = _read_json(record_dir(base, job_name) / "status.json").get("state") == "JOB_STATE_RUNNING"
        if running and (not study or _read_json(base / "trials.json").get("trials")):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{job_name}: the local job did not start within {seconds}s")


def _local_batch_inputs(base: Path) -> None:
    """What the local batch job reads: an untrained tiny classifier exported by this checkout's trainer (as
    tests/vertex/test_batch_local.py's tiny_model) and generated PNGs, a corrupt one among them."""
    import tf_keras as keras

    from tests.trainer.helpers import make_class_folder
    from trainer import export
    from trainer.distribute import Role

    classes = ["blue", "green", "red"]
    inputs = keras.Input((16, 16, 3))
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling2D()(inputs))
    export.export(keras.Model(inputs, outputs), str(base / "model"), 16, Role("chief", 0, True), classes)
    images = make_class_folder(base / "images", classes, per_class=1, seed=99)
    (images / "red" / "broken.png").write_bytes(b"not an image")


def _record(case: Case, host: ProviderHost, fakes: Fakes, tmp: Path) -> dict[str, Any]:
    base = tmp / case.name
    state_dir = case.state_dir(base)
    if case.local and case.resource_type == BATCH_JOB:
        _local_batch_inputs(base)
    fakes.jobs.auto_advance = not case.live
    fakes.jobs.capacity = {STOCKED_OUT: STOCKOUT} if case.name == "vertex_job_fallback" else {}
    checked = host.check(case.inputs(base))
    if list(checked.failures):
        raise RuntimeError(f"{case.name}: Check failed: {list(checked.failures)}")
    created = host.create(checked.inputs)
    outputs = to_json(created.properties)
    if case.name in ("vertex_job_running", "batch_job_running"):
        fakes.jobs.set_state(created.id, aiplatform_v1.JobState.JOB_STATE_RUNNING)  # started after `up`
    entry: dict[str, Any] = {
        "type": case.resource_type,
        "inputs": to_json(checked.inputs),
        "id": created.id,
        "outputs": outputs,
        "service": fakes.snapshot(outputs),
    }
    if case.local:
        if case.live:
            _wait_running(state_dir, created.id, study=case.resource_type == TUNING_JOB)
        entry["files"] = dict(files_under(state_dir))
        if case.live:
            host.delete(created.id, created.properties)  # stop its replicas; the record is taken
        for old, new in ((str(base), BASE), (str(REPO), ROOT)):
            entry = rewrite(entry, old, new)
    return entry


def _check(state: dict[str, Any]) -> None:
    """The recording holds what the test needs: two attempts on the fallback job, live jobs live."""
    resources = state["resources"]
    if "deployment" in resources:
        assert resources["deployment"]["service"]["endpoints"][0]["deployedModels"]
    if set(resources) != {case.name for case in CASES}:  # some cases only: what they hold is checked above
        return
    assert len(resources["vertex_job_fallback"]["outputs"]["attempts"]) == 2
    assert resources["vertex_job_running"]["service"]["custom_jobs"][0]["state"] == "JOB_STATE_RUNNING"
    assert resources["tuning_job_running"]["outputs"]["state"] not in (
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
    )
    for name in ("local_job", "local_job_running", "local_study", "local_study_running"):
        assert any(path.startswith(LOCAL_RECORDS) for path in resources[name]["files"])
    assert resources["local_job"]["outputs"]["metrics"]
    assert resources["local_study"]["outputs"]["best_metric"] == 0.8
    assert "trials.json" in resources["local_study_running"]["files"]
    assert resources["batch_job"]["outputs"]["completion_stats"]["failed_count"] == 1  # read from its results
    assert resources["batch_job_running"]["service"]["batch_jobs"][0]["state"] == "JOB_STATE_RUNNING"
    local_batch = resources["local_batch_job"]
    assert local_batch["outputs"]["state"] == "JOB_STATE_SUCCEEDED", local_batch["outputs"].get("error")
    assert local_batch["outputs"]["completion_stats"]["successful_count"] == 3
    assert any(path.startswith(LOCAL_RECORDS) for path in local_batch["files"])


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def main(only: list[str]) -> None:
    os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = NO_CREDENTIALS  # no real Google API is ever reached
    commit, subject = _git("rev-parse", "HEAD"), _git("log", "-1", "--format=%s")
    fakes = Fakes()
    fakes.start()
    try:
        with tempfile.TemporaryDirectory(prefix="compat-record-") as tmp:
            host = ProviderHost(this_project(**fakes.env()), Path(tmp) / "host.stderr")
            try:
                host.configure()
                cases = [case for case in CASES if not only or case.name in only]
                resources = {case.name: _record(case, host, fakes, Path(tmp)) for case in cases}
            except Exception:
                print(host.stderr(), file=sys.stderr)
                raise
            finally:
                host.stop()
    finally:
        fakes.stop()
    state = {
        "commit": commit,
        "commit_subject": subject,
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "pulumi_sdk": importlib.metadata.version("pulumi"),
        "dill": importlib.metadata.version("dill"),
        "recorder": "python -m tests.compat.record_state",
        "resources": resources,
    }
    _check(state)
    out = HERE / f"state-{state['commit'][:7]}.json"
    out.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
