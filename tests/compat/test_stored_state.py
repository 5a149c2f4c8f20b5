"""State written by earlier versions (each state-<commit>.json, recorded by record_state.py) still works.

Each stored resource is replayed the way the engine does it, through the real dynamic-provider host in a fresh
process: the engine sends the stored outputs, whose `__provider` blob (dill, pickled by reference at the
recorded commit's module paths) the host unpickles for Read and Delete. The fake services hold the stored
jobs, study, model version, image and batch jobs (and what a batch job wrote to Cloud Storage) under their
stored names; a local job's record is its stored files, copied under tmp_path. Per resource: Read (`pulumi
refresh`) finds it with the same outputs, Diff against the same program's inputs today (a new `__provider`
blob) finds nothing to change, today's program replaces it on exactly the inputs this version sets otherwise
(if any), an in-place Update works, and Delete (`pulumi destroy`) stops a live job and removes it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import proto

from tests.compat.cases import (
    BASE,
    BATCH_JOB,
    CASES,
    CUSTOM_JOB,
    DEPLOYMENT,
    IMAGE_BUILD,
    MODEL_VERSION,
    ROOT,
    TUNING_JOB,
    Case,
    record_dir,
    rewrite,
    to_json,
    to_struct,
)
from tests.compat.services import Fakes
from tests.engine.host import ROOT as REPO
from tests.engine.host import ProviderHost, this_project

# One recording per commit whose state must keep working: af4e64b (its deployment on the stack's endpoint:
# the only case recorded there), 6e3517c (the last before the serving image: its batch jobs and model version
# ran in Google's prebuilt container), 4a0a9a0, and 3a1c9ee (before issue 39 moved the lifecycle onto typed
# requests). The two older ones predate the batch prediction: no batch case.
STATES = {
    path.stem.removeprefix("state-"): json.loads(path.read_text())
    for path in sorted(Path(__file__).parent.glob("state-*.json"))
}
# The classes the stored blobs name: they must stay importable there (issue 24, item 6).
PICKLED_AT = {
    CUSTOM_JOB: ("infra.vertex.provider", "CustomJobProvider"),
    TUNING_JOB: (
        "infra.vertex.tuning_provider",
        "TuningJobProvider",
    ),
    MODEL_VERSION: ("infra.vertex.model_provider", "ModelVersionProvider"),
    IMAGE_BUILD: ("infra.cloudbuild.provider", "ImageBuildProvider"),
    BATCH_JOB: ("infra.vertex.batch_provider", "BatchPredictionProvider"),
    DEPLOYMENT: ("infra.vertex.deployment_provider", "DeploymentProvider"),
}
# Outputs a later call recomputes from the job itself: for a finished job they must read back unchanged.
FINISHED_KEYS = {
    CUSTOM_JOB: ("job_name", "state", "placement", "attempts", "model_dir"),
    TUNING_JOB: (
        "job_name",
        "state",
        "placement",
        "attempts",
        "trials",
        "best_trial",
        "best_parameters",
        "best_metric",
    ),
    MODEL_VERSION: ("version_name", "model_name", "version_id", "aliases"),
    IMAGE_BUILD: ("digest", "image_ref", "build_name", "log_url"),
    # completion_stats: the failed count is read again from the stored results (an unreadable image).
    BATCH_JOB: ("job_name", "state", "placement", "attempts", "predictions_dir", "completion_stats"),
    DEPLOYMENT: ("deployed_model_id", "model_version_id", "traffic_percent", "create_time"),
}
# Kinds replaced by deleting the stored one first: two runs of one job would race on one output directory
# and double the bill (infra/vertex/lifecycle/job_provider.py); a model version's new one is created first.
DELETED_FIRST = {CUSTOM_JOB, TUNING_JOB, BATCH_JOB}
# A job's estimate: 0.0 while it was queued (nothing spent), none once it runs on a machine with no sourced
# price (batch prediction machines have none: batch/kind.py), as for a job created today.
UNPRICED_ONCE_RUNNING = {"estimated_cost_usd"}
# How the LocalRunner starts a supervisor: the program directory must not shadow installed packages.
SAFE_PATH_ENV = {"PYTHONSAFEPATH": "1"}
LIVE_STATES = {"JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}


@pytest.fixture(scope="module")
def fakes() -> Iterator[Fakes]:
    services = Fakes()
    services.jobs.auto_advance = False  # nothing moves but what a provider call does (a cancel)
    services.start()
    yield services
    services.stop()


@pytest.fixture(scope="module")
def host(fakes: Fakes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderHost]:
    """One host for the stored stack, as one `pulumi refresh`/`up`/`destroy` would start it."""
    launch = this_project(
        **fakes.env(), GOOGLE_APPLICATION_CREDENTIALS="/nonexistent/no-credentials-in-tests.json"
    )
    started = ProviderHost(launch, tmp_path_factory.mktemp("host") / "host.stderr")
    started.configure()
    yield started
    started.stop()


def stored(commit: str, case: Case, base: Path) -> dict[str, Any]:
    """The case's stored entry, its local paths moved to `base` and this checkout."""
    return rewrite(rewrite(STATES[commit]["resources"][case.name], BASE, str(base)), ROOT, str(REPO))


def restore_files(entry: dict[str, Any], base: Path) -> None:
    for relative, text in entry.get("files", {}).items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def start_supervisor(records: Path) -> subprocess.Popen[bytes]:
    """The stored live local job's supervisor again, started as the LocalRunner starts it."""
    recorded_pids = json.loads((records / "status.json").read_text())["pids"]
    with open(records / "supervisor.log", "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "infra.vertex.local_supervisor", str(records)],
            cwd=REPO,
            env={**os.environ, **SAFE_PATH_ENV},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    (records / "supervisor.pid").write_text(str(supervisor.pid))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until its replicas run: the stored pids are another machine's
        status = json.loads((records / "status.json").read_text() or "{}")
        if status.get("pids") and status["pids"] != recorded_pids:
            return supervisor
        time.sleep(0.05)
    supervisor.kill()
    raise AssertionError(
        f"the supervisor did not start the stored job: {(records / 'supervisor.log').read_text()}"
    )


def wait_for_new_trials(trials: Path, stored_text: str) -> None:
    """Until the restarted study process (python -m infra.vertex.local_study) has started its own trial."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = trials.read_text()
        if text != stored_text and json.loads(text or "{}").get("trials"):
            return
        time.sleep(0.05)
    raise AssertionError(f"the stored study's process started no trial: {trials.read_text()}")


def stop(supervisor: subprocess.Popen[bytes]) -> None:
    """After a failed test: SIGTERM, as a cancel sends, so the supervisor stops its replicas; then SIGKILL."""
    if supervisor.poll() is None:
        supervisor.terminate()
        try:
            supervisor.wait(timeout=30)
        except subprocess.TimeoutExpired:
            supervisor.kill()
            supervisor.wait()


def test_every_recording_is_replayed() -> None:
    assert {"af4e64b", "6e3517c", "4a0a9a0", "3a1c9ee"} <= set(STATES)
    # 6e3517c holds every case but the deployment (later); the older ones every case but the batch jobs too;
    # af4e64b, the first with the stack's endpoint, the deployment (its jobs' state is 6e3517c's).
    jobs = {case.name for case in CASES if case.resource_type != DEPLOYMENT}
    assert set(STATES["6e3517c"]["resources"]) == jobs
    for commit in ("4a0a9a0", "3a1c9ee"):
        older = {c.name for c in CASES if c.resource_type not in (BATCH_JOB, DEPLOYMENT)}
        assert set(STATES[commit]["resources"]) == older
    assert set(STATES["af4e64b"]["resources"]) == {"deployment"}


# Every stored resource of every recording, with its case.
STORED = [(commit, c) for commit in sorted(STATES) for c in CASES if c.name in STATES[commit]["resources"]]


@pytest.mark.parametrize("commit", sorted(STATES))
def test_the_stored_blobs_name_the_provider_classes_by_reference(commit: str) -> None:
    assert STATES[commit]["commit"].startswith(commit)
    for name, entry in STATES[commit]["resources"].items():
        module, cls = PICKLED_AT[entry["type"]]
        blob = base64.b64decode(entry["outputs"]["__provider"])
        # By reference: the blob names the module and class, and holds none of their code.
        assert module.encode() in blob and cls.encode() in blob and len(blob) < 200, name


def without_state(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in attempt.items() if k != "state"} for attempt in attempts]


def kept(new: Any, old: Any) -> bool:
    """`new` keeps everything `old` held: the same values, the same list lengths; a later version may add
    keys (issue 25 added `region` to `placement` and each `attempts` entry)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and kept(new[k], v) for k, v in old.items())
    if isinstance(old, list):
        return isinstance(new, list) and len(new) == len(old) and all(map(kept, new, old))
    return new == old


def check_read(case: Case, host: ProviderHost, entry: dict[str, Any]) -> None:
    read = host.read(entry["id"], to_struct(entry["outputs"]))
    assert read.id == entry["id"]
    outputs = to_json(read.properties)
    dropped = set(entry["outputs"]) - set(outputs)
    unpriced = UNPRICED_ONCE_RUNNING if case.live and case.resource_type == BATCH_JOB else set()
    assert sorted(dropped - unpriced) == []
    assert outputs["__provider"] == entry["outputs"]["__provider"]
    if case.live:
        # It ran on after the state was written: the same job on the same shape, its state now the job's.
        assert outputs["job_name"] == entry["outputs"]["job_name"] and outputs["state"] in LIVE_STATES
        assert kept(outputs["placement"], entry["outputs"]["placement"])
        assert kept(without_state(outputs["attempts"]), without_state(entry["outputs"]["attempts"]))
    else:
        keys = FINISHED_KEYS[case.resource_type]
        assert kept({k: outputs.get(k) for k in keys}, {k: entry["outputs"].get(k) for k in keys})
    if case.name == "local_job":
        assert outputs["metrics"] == entry["outputs"]["metrics"]  # read again from the restored model dir


def stored_values(case: Case, entry: dict[str, Any]) -> dict[str, Any]:
    """The upgraded inputs as the stored program set them (None: it did not set them)."""
    return {key: entry["outputs"].get(key) for key in case.upgraded}


def check_update(case: Case, host: ProviderHost, entry: dict[str, Any], base: Path) -> None:
    """The same program with `case.update` changes the stored resource in place."""
    assert case.update is not None
    olds, old_inputs = to_struct(entry["outputs"]), to_struct(entry["inputs"])
    changed = host.check(case.inputs(base, **stored_values(case, entry), **case.update), olds=old_inputs)
    assert list(changed.failures) == []
    diff = host.diff(entry["id"], olds, changed.inputs)
    assert diff.changes == proto.DiffResponse.DIFF_SOME and list(diff.replaces) == []
    updated = to_json(host.update(entry["id"], olds, changed.inputs).properties)
    assert sorted(set(entry["outputs"]) - set(updated)) == []
    for key, value in case.update.items():
        assert updated[key] == value
    name_key = next(key for key in ("digest", "deployed_model_id", "job_name") if key in updated)
    assert updated[name_key] == entry["outputs"][name_key]


def gone(case: Case, fakes: Fakes, entry: dict[str, Any], base: Path) -> bool:
    """Whether the resource is no longer where it lived."""
    if case.local:
        return not record_dir(case.state_dir(base), entry["id"]).exists()
    if case.resource_type in (CUSTOM_JOB, BATCH_JOB):
        return entry["id"] not in fakes.jobs.jobs
    if case.resource_type == TUNING_JOB:
        return entry["id"] not in fakes.jobs.tuning_jobs
    if case.resource_type == DEPLOYMENT:
        outputs = entry["outputs"]
        return outputs["deployed_model_id"] not in fakes.endpoints.deployed(outputs["endpoint"])
    return entry["outputs"]["version_id"] not in fakes.models.versions(entry["outputs"]["model_name"])


@pytest.mark.parametrize(("commit", "case"), STORED, ids=[f"{commit}-{case.name}" for commit, case in STORED])
def test_stored_resource_reads_diffs_updates_and_deletes(
    commit: str, case: Case, fakes: Fakes, host: ProviderHost, tmp_path: Path
) -> None:
    base = tmp_path / case.name
    entry = stored(commit, case, base)
    fakes.seed(entry["service"])
    restore_files(entry, case.state_dir(base))
    supervisor = None
    if case.local and case.live:
        supervisor = start_supervisor(record_dir(case.state_dir(base), entry["id"]))
        if case.resource_type == TUNING_JOB:
            wait_for_new_trials(base / "trials.json", entry["files"]["trials.json"])
    try:
        check_read(case, host, entry)

        # The same program today: its inputs carry today's `__provider` blob, which is no change.
        news = host.check(case.inputs(base, **stored_values(case, entry)), olds=to_struct(entry["inputs"]))
        # What today's Check refuses in the stored program, naming the input (today's stack always sets it).
        refused = sorted(f.property for f in news.failures)
        assert refused == sorted(case.refused_as_stored), list(news.failures)
        same = host.diff(entry["id"], to_struct(entry["outputs"]), news.inputs)
        assert same.changes == proto.DiffResponse.DIFF_NONE, (list(same.diffs), list(same.replaces))
        if case.upgraded:  # today's program: replaced on exactly those inputs (a job's old run deleted first)
            today = host.check(case.inputs(base), olds=to_struct(entry["inputs"]))
            assert list(today.failures) == []
            upgrade = host.diff(entry["id"], to_struct(entry["outputs"]), today.inputs)
            assert sorted(upgrade.replaces) == sorted(case.upgraded)
            assert upgrade.deleteBeforeReplace == (case.resource_type in DELETED_FIRST)

        if case.update is not None:
            check_update(case, host, entry, base)

        calls = len(fakes.jobs.calls)
        host.delete(entry["id"], to_struct(entry["outputs"]))
        if case.resource_type == IMAGE_BUILD:
            # Today's delete keeps the pushed image (running jobs may still pull it): it reads back.
            assert host.read(entry["id"], to_struct(entry["outputs"])).id == entry["id"]
            return
        assert gone(case, fakes, entry, base)
        assert host.read(entry["id"], to_struct(entry["outputs"])).id == ""
        if case.live and not case.local:
            methods = [method for method, request in fakes.jobs.calls[calls:] if request.name == entry["id"]]
            cancel = next(m for m in methods if m.startswith("Cancel"))
            assert methods.index(cancel) < methods.index(cancel.replace("Cancel", "Delete"))
        if supervisor is not None:
            assert supervisor.wait(timeout=30) == 0  # it recorded CANCELLED and stopped its replicas
    finally:
        if supervisor is not None:
            stop(supervisor)
