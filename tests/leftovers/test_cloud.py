"""`python -m infra.leftovers` on a cloud stack, against fakes of the services through the real clients."""

from __future__ import annotations

import grpc
import pytest
from google.cloud import aiplatform_v1

from infra.components.killswitch import guard_names
from infra.config.experiment import default_experiment
from infra.leftovers import prices, vertex_jobs
from infra.leftovers.prices import GIB
from infra.vertex.cost import pricing
from tests.fakes.vertex import JobState
from tests.leftovers.conftest import FALLBACK, HOME, LABELS, OTHER, PROJECT, STACK, Cloud, parent

GiB = GIB


def test_this_stacks_live_jobs_in_home_and_fallback_regions_are_listed(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    live = {
        cloud.job(HOME, LABELS),
        cloud.study(HOME, LABELS, JobState.JOB_STATE_PENDING),
        cloud.batch(FALLBACK, LABELS, JobState.JOB_STATE_QUEUED),
        cloud.job(FALLBACK, LABELS),
    }
    done = cloud.job(HOME, LABELS, JobState.JOB_STATE_SUCCEEDED)
    others = cloud.job(HOME, OTHER)
    code, report = cloud.json(capsys)
    assert (code, report["cannot_tell"]) == (1, [])
    assert {item["name"] for item in report["items"]} == live
    assert all(item["bills"] and item["live_job"] for item in report["items"])
    by_name = {item["name"]: item for item in report["items"]}
    assert {by_name[n]["region"] for n in live} == {HOME, FALLBACK}
    assert {by_name[n]["kind"] for n in live} == {
        "CustomJob",
        "HyperparameterTuningJob",
        "BatchPredictionJob",
    }
    assert done not in by_name and others not in by_name
    # Each kind listed in each region the stack names, filtered on its labels and live states.
    lists = [(m, r.parent) for m, r in cloud.vertex.calls if m.startswith("List") and m.endswith("Jobs")]
    assert {p for _, p in lists} == {parent(HOME), parent(FALLBACK)}
    assert len(lists) == 6


def test_every_page_of_every_list_is_read(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    """Each service answers a page at a time (the standard next_page_token): the clients' pagers follow it."""
    cloud.vertex.list_page_size = cloud.inventory.list_page_size = 1
    live = {
        *(cloud.job(HOME, LABELS) for _ in range(2)),
        *(cloud.study(HOME, LABELS) for _ in range(2)),
        *(cloud.batch(HOME, LABELS) for _ in range(2)),
    }
    boards = {cloud.inventory.add_tensorboard(parent(HOME), f"b{i}", LABELS) for i in range(2)}
    models = {cloud.inventory.add_model(parent(HOME), f"m{i}", LABELS) for i in range(2)}
    cloud.inventory.add_repository(parent(HOME), "someone-elses", GiB, {})
    repo = cloud.inventory.add_repository(parent(HOME), f"vertex-training-{STACK}", GiB, LABELS)
    code, report = cloud.json(capsys)
    assert (code, report["cannot_tell"]) == (1, [])
    assert {item["name"] for item in report["items"]} == live | boards | models | {repo}
    pages = [
        r.page_token for m, r in cloud.vertex.calls if m == "ListCustomJobs" and r.parent == parent(HOME)
    ]
    assert pages == ["", "1"]


def test_the_text_report_gives_each_item_its_command_and_a_summary(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    job = cloud.job(HOME, LABELS)
    batch = cloud.batch(FALLBACK, LABELS)
    assert cloud.leftovers() == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Leftovers of stack {STACK} (project {PROJECT}, regions {HOME}, {FALLBACK}):"
    assert out[1].split() == ["KIND", "NAME", "REGION", "STATE", "COST", "REMOVE", "WITH"]
    # One line per item: what, where, its state, what it costs, and the command that removes it.
    (job_line,) = [line for line in out if job in line]
    assert job_line.split()[:4] == ["CustomJob", job, HOME, "RUNNING"]
    assert job_line.endswith(
        f"  gcloud ai custom-jobs cancel {job.rsplit('/', 1)[1]} --region={HOME} --project={PROJECT}"
    )
    assert "bills by the hour while live" in job_line
    (batch_line,) = [line for line in out if batch in line and line.startswith("BatchPredictionJob")]
    assert batch_line.endswith(f"https://{FALLBACK}-aiplatform.googleapis.com/v1/{batch}:cancel")
    assert len(out) == 5  # the title, the header, two items, the summary
    assert out[-1] == f"Stack {STACK}: 2 still bill: 2 live job(s) billing by the hour."


def test_cancel_cancels_exactly_this_stacks_live_jobs_and_waits_until_they_stop(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = [cloud.study(HOME, LABELS), cloud.job(HOME, LABELS), cloud.batch(FALLBACK, LABELS)]
    others = [cloud.job(HOME, OTHER), cloud.job(HOME, LABELS, JobState.JOB_STATE_SUCCEEDED)]
    assert cloud.leftovers("--cancel") == 0
    out = capsys.readouterr().out
    cancels = [r.name for m, r in cloud.vertex.calls if m.startswith("Cancel")]
    assert sorted(cancels) == sorted(ours)
    first = next(m for m, _ in cloud.vertex.calls if m.startswith("Cancel"))
    assert first == "CancelHyperparameterTuningJob"
    assert cloud.vertex.tuning_jobs[ours[0]].state == JobState.JOB_STATE_CANCELLED
    assert cloud.vertex.jobs[ours[1]].state == JobState.JOB_STATE_CANCELLED
    assert cloud.vertex.jobs[ours[2]].state == JobState.JOB_STATE_CANCELLED
    assert cloud.vertex.jobs[others[0]].state == JobState.JOB_STATE_RUNNING
    assert "waiting up to 600 s for 3 job(s) to stop" in out
    after = out.split("After cancelling:")[1]
    assert after.strip().splitlines()[-1] == f"Stack {STACK}: nothing bills."


def test_a_job_still_cancelling_is_listed_and_waited_for_not_cancelled_again(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CANCELLING job may still hold its machines: it is listed (as the kill switch would not list it, since
    it needs no second cancel), --cancel waits for it and calls no cancel on it."""
    stopping = cloud.job(HOME, LABELS, JobState.JOB_STATE_CANCELLING)
    code, report = cloud.json(capsys)
    (item,) = report["items"]
    assert (code, item["name"], item["state"], item["bills"]) == (1, stopping, "CANCELLING", True)
    assert item["cost"] == "bills until its machines are released"
    assert cloud.leftovers("--cancel") == 0
    assert not [m for m, _ in cloud.vertex.calls if m.startswith("Cancel")]
    assert cloud.vertex.jobs[stopping].state == JobState.JOB_STATE_CANCELLED  # read until it ended


def test_cancel_never_deletes_storage_and_prints_the_commands_that_would(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = f"{PROJECT}-{STACK}-training"
    cloud.storage.add_bucket(bucket, PROJECT, HOME, LABELS)
    cloud.storage.put(f"gs://{bucket}/runs/a/model.keras", b"x" * 1000)
    job = cloud.job(HOME, LABELS)
    assert cloud.leftovers("--cancel") == 1  # the bucket still bills
    out = capsys.readouterr().out
    assert cloud.vertex.jobs[job].state == JobState.JOB_STATE_CANCELLED
    assert cloud.storage.get(f"gs://{bucket}/runs/a/model.keras") == b"x" * 1000
    tail = out.split("Nothing was deleted; to remove what is left:")[1].strip().splitlines()
    assert tail == [f"gcloud storage rm --recursive gs://{bucket}"]


def test_a_region_whose_listing_fails_is_named_and_exits_2_while_the_other_is_still_listed(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    home = cloud.job(HOME, LABELS)
    cloud.job(FALLBACK, LABELS)
    cloud.vertex.region_down[FALLBACK] = grpc.StatusCode.PERMISSION_DENIED
    code, report = cloud.json(capsys)
    assert code == 2
    assert [item["name"] for item in report["items"]] == [home]
    unread = [line for line in report["cannot_tell"] if line.startswith(f"{FALLBACK}:")]
    assert [line.split(" (")[0] for line in unread] == [
        f"{FALLBACK}: HyperparameterTuningJob jobs",
        f"{FALLBACK}: CustomJob jobs",
        f"{FALLBACK}: BatchPredictionJob jobs",
    ]
    assert all("PERMISSION_DENIED" in line or "403" in line or "injected" in line for line in unread)
    assert cloud.leftovers() == 2
    assert f"could not read 3: {FALLBACK}: HyperparameterTuningJob jobs" in capsys.readouterr().out


def test_one_kind_failing_stops_no_other(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    job = cloud.job(HOME, LABELS)
    cloud.vertex.fail("ListBatchPredictionJobs", grpc.StatusCode.UNIMPLEMENTED, times=2)
    code, report = cloud.json(capsys)
    assert code == 2
    assert [item["name"] for item in report["items"]] == [job]
    assert [line.split(" (")[0] for line in report["cannot_tell"]] == [
        f"{HOME}: BatchPredictionJob jobs",
        f"{FALLBACK}: BatchPredictionJob jobs",
    ]


def test_nothing_live_and_nothing_stored_exits_0(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.job(HOME, LABELS, JobState.JOB_STATE_SUCCEEDED)
    cloud.job(HOME, LABELS, JobState.JOB_STATE_CANCELLED)
    cloud.job(FALLBACK, OTHER)
    cloud.storage.add_bucket("someone-elses-bucket", PROJECT, HOME, {})
    code, report = cloud.json(capsys)
    assert (code, report["items"], report["cannot_tell"]) == (0, [], [])
    assert cloud.leftovers() == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["nothing found", f"Stack {STACK}: nothing bills."]


def test_storage_items_with_size_and_monthly_cost(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    bucket = f"{PROJECT}-{STACK}-training"
    cloud.storage.add_bucket(bucket, PROJECT, HOME, LABELS)
    cloud.storage.put(f"gs://{bucket}/data/train-0.tfrecord", b"d" * 3000)
    cloud.storage.soft_deleted[(bucket, "runs/old/model.keras")] = b"m" * 1000
    cloud.storage.noncurrent[(bucket, "data/train-0.tfrecord")] = [b"v" * 2000]  # an overwritten version
    labelled = "renamed-by-hand"  # carries the stack's labels, not its name
    cloud.storage.add_bucket(labelled, PROJECT, "europe-west4", LABELS)
    cloud.storage.put(f"gs://{labelled}/x", b"y" * 10)
    sources = "gcf-v2-sources-123456789012-us-central1"
    function = guard_names("vertex-training", STACK).function
    cloud.storage.add_bucket(sources, PROJECT, HOME, {})
    cloud.storage.put(f"gs://{sources}/{function}/function-source.zip", b"z" * 500)
    cloud.storage.put(f"gs://{sources}/someone-elses-function/function-source.zip", b"o" * 700)
    elsewhere = "gcf-v2-sources-123456789012-europe-west4"  # not the stack's region
    cloud.storage.add_bucket(elsewhere, PROJECT, "europe-west4", {})
    cloud.storage.put(f"gs://{elsewhere}/{function}/function-source.zip", b"e")
    cloud.storage.add_bucket(f"{PROJECT}-prod-training", PROJECT, HOME, OTHER)
    cloud.inventory.add_repository(parent(HOME), f"vertex-training-{STACK}", 3 * GiB, LABELS)
    cloud.inventory.add_repository(parent(HOME), "vertex-training-prod", GiB, OTHER)
    code, report = cloud.json(capsys)
    assert (code, report["cannot_tell"]) == (1, [])
    items = {item["name"]: item for item in report["items"]}
    folder = f"{sources}/{function}/"
    assert set(items) == {bucket, labelled, folder, f"{parent(HOME)}/repositories/vertex-training-{STACK}"}
    ours = items[bucket]
    assert (ours["kind"], ours["region"], ours["size_bytes"], ours["bills"]) == ("bucket", HOME, 6000, True)
    assert ours["state"] == "5.9 KiB in 3 object(s), 1 soft-deleted"
    assert ours["monthly_usd"] == pytest.approx(6000 / GiB * 0.020)
    assert ours["price_source"] == f"Cloud Storage pricing, {prices.STORAGE_PAGE}, read 2026-11-26"
    assert ours["cost"].startswith("< USD 0.01/month (Standard storage, USD 0.020/GiB-month)")
    # europe-west4's row was past what the page's copy showed: no figure rather than a guess.
    assert (items[labelled]["bills"], items[labelled]["cost"]) == (
        True,
        "no sourced price (Standard storage in europe-west4)",
    )
    # Only the kill switch's own folder of the shared sources bucket: never another function's source.
    assert (items[folder]["kind"], items[folder]["size_bytes"]) == ("function source (Google-created)", 500)
    assert items[folder]["remove"] == f"gcloud storage rm --recursive gs://{folder}"
    repo = items[f"{parent(HOME)}/repositories/vertex-training-{STACK}"]
    assert (repo["kind"], repo["state"], repo["size_bytes"], repo["monthly_usd"]) == (
        "repository",
        "3.0 GiB",
        3 * GiB,
        pytest.approx(3 * GiB / 10**9 * 0.10),  # "per GB" undefined on the page: decimal GB bound it
    )
    assert repo["cost"].startswith("at most USD 0.32/month (USD 0.10/GB-month;")
    assert repo["remove"] == (
        f"gcloud artifacts repositories delete vertex-training-{STACK} --location={HOME} --project={PROJECT}"
    )
    assert repo["monthly_is_bound"] and not ours.get("monthly_is_bound")
    assert cloud.leftovers() == 1
    # The total holds a bound (the repository's), so it is one too.
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"Stack {STACK}: 4 still bill: 4 billing by the month (at most USD 0.32/month where priced, "
        "1 with no sourced price)."
    )


def test_tensorboards_models_and_the_kill_switch_function(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    board = cloud.inventory.add_tensorboard(parent(HOME), "111", LABELS)
    cloud.inventory.add_tensorboard(parent(HOME), "222", OTHER)
    kept = cloud.inventory.add_model(parent(HOME), "333", LABELS)
    serving = cloud.inventory.add_model(parent(HOME), "444", LABELS, deployed=1)
    cloud.inventory.add_model(parent(HOME), "555", OTHER)
    function = cloud.inventory.add_function(parent(HOME), guard_names("vertex-training", STACK).function)
    code, report = cloud.json(capsys)
    assert code == 1
    items = {item["name"]: item for item in report["items"]}
    assert set(items) == {board, kept, serving, function}
    assert (items[board]["bills"], items[board]["cost"]) == (
        True,
        "no sourced price (its stored data bills by the month)",
    )
    assert (items[kept]["bills"], items[kept]["state"]) == (False, "registered, not deployed")
    assert (items[serving]["bills"], items[serving]["state"]) == (True, "deployed to 1 endpoint(s)")
    assert items[function]["state"] == "ACTIVE"
    assert items[function]["remove"].startswith("gcloud functions delete vt-killswitch-lt-")


def test_a_model_whose_deployed_version_is_not_its_default_bills(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    model = cloud.inventory.add_model(parent(HOME), "333", LABELS)  # its default version is not deployed
    cloud.inventory.add_model_version(model, deployed=1)
    code, report = cloud.json(capsys)
    (item,) = report["items"]
    assert (code, item["name"], item["bills"], item["state"]) == (1, model, True, "deployed to 1 endpoint(s)")
    (versions,) = [r for m, r in cloud.inventory.calls if m == "ListModelVersions"]
    assert versions.name == model


def test_only_a_free_model_left_exits_0(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.inventory.add_model(parent(HOME), "333", LABELS)
    code, report = cloud.json(capsys)
    assert code == 0 and len(report["items"]) == 1
    assert cloud.leftovers() == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"Stack {STACK}: nothing bills, 1 free."


def test_all_regions_asks_every_vertex_region(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = cloud.job("europe-west4", LABELS)  # started by an older config
    code, report = cloud.json(capsys)
    assert (code, report["items"]) == (0, [])
    code, report = cloud.json(capsys, "--all-regions")
    assert code == 1
    assert [item["name"] for item in report["items"]] == [elsewhere]
    assert report["regions"] == [HOME, FALLBACK, "europe-west4"]
    (locations,) = [r for m, r in cloud.vertex.calls if m == "ListLocations"]
    assert locations.name == f"projects/{PROJECT}"


def test_all_regions_follows_every_page_of_the_locations_api(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """ListLocations answers a page at a time; the mixin hands back one raw response, not a pager."""
    cloud.vertex.locations = [HOME, FALLBACK, "europe-west4", "asia-east1"]
    cloud.vertex.locations_page_size = 2
    late = cloud.job("asia-east1", LABELS)  # on the second page
    code, report = cloud.json(capsys, "--all-regions")
    assert (code, [item["name"] for item in report["items"]]) == (1, [late])
    assert report["regions"] == [HOME, FALLBACK, "asia-east1", "europe-west4"]
    tokens = [r.page_token for m, r in cloud.vertex.calls if m == "ListLocations"]
    assert tokens == ["", "2"]


def test_all_regions_unreadable_is_named_and_the_configs_regions_are_still_read(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    job = cloud.job(FALLBACK, LABELS)
    cloud.vertex.fail("ListLocations", grpc.StatusCode.PERMISSION_DENIED)
    code, report = cloud.json(capsys, "--all-regions")
    assert code == 2
    assert [item["name"] for item in report["items"]] == [job]
    (unread,) = report["cannot_tell"]
    assert unread.startswith("every Vertex AI region (Locations API: 403 ")
    assert unread.endswith("; read the config's regions only")


def test_without_credentials_it_says_so_in_one_line_and_exits_2(
    cloud: Cloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """No credentials at all (google.auth.default raises DefaultCredentialsError): one line naming the
    sign-in, never "nothing bills" (nothing was read), exit 2; --cancel cancels nothing and says the same."""
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # no ADC file of gcloud's
    line = (
        f"Stack {STACK}: cannot tell what bills in project {PROJECT}: no Google credentials on this machine; "
        "sign in with `gcloud auth application-default login`."
    )
    for args in ((), ("--cancel",)):
        assert cloud.leftovers(*args) == 2
        assert capsys.readouterr().out.splitlines() == [line]
    code, report = cloud.json(capsys)
    assert (code, report["items"]) == (2, [])
    assert report["cannot_tell"] == [
        "credentials: no Google credentials on this machine; "
        "sign in with `gcloud auth application-default login`"
    ]
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    assert cloud.leftovers() == 2
    out = capsys.readouterr().out
    assert out.startswith(
        f"Stack {STACK}: cannot tell what bills in project {PROJECT}: Google credentials unusable ("
    )
    assert "missing.json" in out and out.rstrip().endswith("`gcloud auth application-default login`.")


def test_with_something_unread_nothing_found_is_not_called_zero(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.vertex.region_down[FALLBACK] = grpc.StatusCode.PERMISSION_DENIED
    assert cloud.leftovers() == 2
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"Stack {STACK}: nothing of what was read bills, could not read 3: {FALLBACK}: ")


def test_a_bad_stack_name_exits_2_naming_the_problem(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    from infra.leftovers.command import main

    assert main(["--stack", "nosuch"], root=cloud.root) == 2
    assert "no stack file Pulumi.nosuch.yaml" in capsys.readouterr().err
    assert main(["--stack", "nosuch", "--json"], root=cloud.root) == 2
    assert '"cannot_tell": ["stack file: (stack name): no stack file' in capsys.readouterr().out


def test_an_unexpected_failure_is_named_never_a_traceback(
    cloud: Cloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra.leftovers import buckets

    def broken(_wanted: object) -> None:
        raise RuntimeError("something nobody planned for")

    monkeypatch.setattr(buckets, "find", broken)
    job = cloud.job(HOME, LABELS)
    code, report = cloud.json(capsys)
    assert code == 2
    assert report["cannot_tell"] == ["buckets (RuntimeError: something nobody planned for)"]
    assert [item["name"] for item in report["items"]] == [job]


def _t4_pool(replicas: int = 1) -> aiplatform_v1.WorkerPoolSpec:
    return aiplatform_v1.WorkerPoolSpec(
        machine_spec=aiplatform_v1.MachineSpec(
            machine_type="n1-standard-4",
            accelerator_type=aiplatform_v1.AcceleratorType.NVIDIA_TESLA_T4,
            accelerator_count=1,
        ),
        replica_count=replicas,
    )


def test_a_live_jobs_hourly_price_from_the_projects_sourced_prices(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """n1-standard-4 + 1 x T4 in us-central1 on demand: USD 0.218499 + 0.4025 an hour (the cited Vertex AI
    price table; the fake serves no Cloud Billing catalog, so the table stands); a study runs its parallel
    trials at once; a Spot job has the on-demand price as its bound; a batch prediction has none."""
    pricing.Catalog.forget()
    spec = aiplatform_v1.CustomJobSpec(worker_pool_specs=[_t4_pool()])
    job = cloud.vertex.add_job(parent(HOME), aiplatform_v1.CustomJob(labels=LABELS, job_spec=spec))
    spot = aiplatform_v1.CustomJobSpec(
        worker_pool_specs=[_t4_pool()],
        scheduling=aiplatform_v1.Scheduling(strategy=aiplatform_v1.Scheduling.Strategy.SPOT),
    )
    spot_job = cloud.vertex.add_job(parent(HOME), aiplatform_v1.CustomJob(labels=LABELS, job_spec=spot))
    study = cloud.vertex.add_study(
        parent(HOME),
        aiplatform_v1.HyperparameterTuningJob(labels=LABELS, trial_job_spec=spec, parallel_trial_count=2),
    )
    batch = cloud.vertex.add_job(
        parent(HOME),
        aiplatform_v1.BatchPredictionJob(
            labels=LABELS,
            dedicated_resources=aiplatform_v1.BatchDedicatedResources(
                machine_spec=_t4_pool().machine_spec, starting_replica_count=1, max_replica_count=1
            ),
        ),
    )
    try:
        code, report = cloud.json(capsys)
        assert cloud.leftovers() == 1
        text = capsys.readouterr().out
    finally:
        pricing.Catalog.forget()
    costs = {item["name"]: item["cost"] for item in report["items"]}
    assert code == 1
    assert costs[job] == "USD 0.62/h while live"
    assert costs[study] == "USD 1.24/h while live"
    assert costs[spot_job].startswith("at most USD 0.62/h (on-demand price; Spot is billed below it, ")
    # Prediction node-hours are not training prices: no figure rather than a wrong one.
    assert costs[batch] == "bills by the hour while live (no sourced price for its machines)"
    hourly = {item["name"]: item.get("hourly_usd") for item in report["items"]}
    assert hourly[job] == pytest.approx(0.218499 + 0.4025) and hourly[study] == pytest.approx(2 * hourly[job])
    assert batch not in {name for name, usd in hourly.items() if usd is not None}
    assert text.splitlines()[-1] == (
        f"Stack {STACK}: 4 still bill: 4 live job(s) billing by the hour (at most USD 2.48/h where priced)."
    )


def test_ctrl_c_during_the_cancel_wait_says_what_stands_and_exits_2(
    cloud: Cloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud.job(HOME, LABELS, JobState.JOB_STATE_CANCELLING)

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(vertex_jobs.time, "sleep", interrupted)
    monkeypatch.setattr(cloud.vertex, "_step", lambda _job: None)  # stays CANCELLING
    assert cloud.leftovers("--cancel") == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"interrupted: what stack {STACK} leaves is not known; cancels already sent still stand. "
        f"Run `.venv/bin/python -m infra.leftovers --stack {STACK}` again to list it."
    ]


def test_a_failure_outside_every_finder_is_one_line_and_exits_2(
    cloud: Cloud, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> list[str]:
        raise ValueError("a location id nobody expected\nsecond line")

    monkeypatch.setattr(vertex_jobs, "all_regions", broken)
    assert cloud.leftovers("--all-regions") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: listing stack {STACK}'s leftovers failed (ValueError: a location id nobody expected); "
        "what it leaves is not known."
    ]
    code, report = cloud.json(capsys, "--all-regions")
    assert (code, report["items"]) == (2, [])
    assert report["cannot_tell"] == ["listing failed (ValueError: a location id nobody expected)"]


def add_experiment(cloud: Cloud, experiment: str, runs: int) -> str:
    """The stack's experiment and its runs, as custom_job/experiments.py makes them (child run contexts)."""
    store = f"{parent(HOME)}/metadataStores/default"
    cloud.metadata.stores[store] = aiplatform_v1.MetadataStore(name=store)
    name = f"{store}/contexts/{experiment}"
    cloud.metadata.contexts[name] = aiplatform_v1.Context(name=name, schema_title="system.Experiment")
    for index in range(runs):
        run = f"{name}-train-{index:012d}"
        cloud.metadata.contexts[run] = aiplatform_v1.Context(
            name=run, schema_title="system.ExperimentRun", parent_contexts=[name]
        )
    return name


def test_the_stacks_experiment_is_listed_with_its_runs_and_the_command_that_deletes_it(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = default_experiment(STACK)  # the dev stack's file sets none: the stack's default name
    ours = add_experiment(cloud, experiment, runs=3)
    add_experiment(cloud, "someone-elses", runs=1)
    code, report = cloud.json(capsys)
    assert code == 1  # its stored metadata bills
    (item,) = [item for item in report["items"] if item["kind"] == "experiment"]
    assert (item["name"], item["region"], item["state"]) == (ours, HOME, "3 run(s)")
    assert item["bills"] is True and item["cost"].startswith("no sourced price")
    assert item["remove"] == (
        'python -c "from google.cloud import aiplatform; '
        f"aiplatform.Experiment('{experiment}', project='{PROJECT}', location='{HOME}').delete()\""
    )
    assert not any("experiments" in line for line in report["cannot_tell"])


def test_no_experiment_no_item(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    _, report = cloud.json(capsys)
    assert [item for item in report["items"] if item["kind"] == "experiment"] == []
    assert not any("experiments" in line for line in report["cannot_tell"])


def _storage_sku(cloud: Cloud, description: str, usd: float, regions: tuple[str, ...]) -> None:
    cloud.catalog.add_sku(
        description,
        usd,
        regions=regions,
        unit="GiBy.mo",
        service_id="95FF-2EF5-5EA1",
        service_name="Cloud Storage",
        resource_family="Storage",
    )


def test_storage_prices_come_from_the_billing_catalog_for_each_location(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regions the dated table lacks, a multi-region and the repository are priced from the catalog (its
    test values, not Google's); a class A operation or a dual-region SKU never prices a regional bucket."""
    _storage_sku(cloud, "Standard Storage Netherlands", 0.021, ("europe-west4",))
    _storage_sku(cloud, "Standard Storage Class A Operations Netherlands", 0.05, ("europe-west4",))
    _storage_sku(cloud, "Standard Storage US Multi-region", 0.026, ("us",))
    _storage_sku(cloud, "Standard Storage Dual-region Iowa and South Carolina", 0.022, ("us-central1",))
    cloud.catalog.add_sku(
        "Artifact Registry Storage",
        0.1,
        regions=(HOME,),
        unit="GiBy.mo",
        free_tier=True,
        service_id="149C-F9EC-3994",
        service_name="Artifact Registry",
        resource_family="ApplicationServices",
    )
    regional, multi, home = "ours-in-europe", "ours-in-us", f"{PROJECT}-{STACK}-training"
    cloud.storage.add_bucket(regional, PROJECT, "europe-west4", LABELS)
    cloud.storage.add_bucket(multi, PROJECT, "US", LABELS, location_type="multi-region")
    cloud.storage.add_bucket(home, PROJECT, HOME, LABELS)
    for bucket in (regional, multi, home):
        cloud.storage.put(f"gs://{bucket}/x", b"y" * (GiB // 1024))
    cloud.inventory.add_repository(parent(HOME), f"vertex-training-{STACK}", 3 * GiB, LABELS)
    _code, report = cloud.json(capsys)
    items = {item["name"]: item for item in report["items"]}
    size = GiB // 1024
    assert items[regional]["monthly_usd"] == pytest.approx(size / GiB * 0.021)
    assert items[regional]["price_source"] == "Cloud Billing Catalog (read live), Cloud Storage, europe-west4"
    assert items[multi]["monthly_usd"] == pytest.approx(size / GiB * 0.026)
    # us-central1: only the dual-region SKU names it, which is not a regional bucket's price: the table.
    assert items[home]["monthly_usd"] == pytest.approx(size / GiB * 0.020)
    assert items[home]["price_source"].startswith("Cloud Storage pricing, https://cloud.google.com/storage")
    repo = items[f"{parent(HOME)}/repositories/vertex-training-{STACK}"]
    assert repo["monthly_usd"] == pytest.approx(3 * 0.1) and repo["monthly_is_bound"]
    assert repo["price_source"] == f"Cloud Billing Catalog (read live), Artifact Registry, {HOME}"
    assert repo["cost"].startswith("at most USD 0.30/month (USD 0.1000/GiB-month past the billing account's")


def test_two_prices_for_one_location_are_no_catalog_price(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    _storage_sku(cloud, "Standard Storage Netherlands", 0.021, ("europe-west4",))
    _storage_sku(cloud, "Standard Storage Amsterdam", 0.03, ("europe-west4",))
    cloud.storage.add_bucket("ours-in-europe", PROJECT, "europe-west4", LABELS)
    cloud.storage.put("gs://ours-in-europe/x", b"y" * 100)
    _code, report = cloud.json(capsys)
    (item,) = [i for i in report["items"] if i["name"] == "ours-in-europe"]
    assert item.get("monthly_usd") is None
    assert item["cost"] == "no sourced price (Standard storage in europe-west4)"
