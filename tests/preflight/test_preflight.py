"""`python -m infra.preflight` against fakes of every service it reads, through the real client libraries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.api_core import exceptions as gexc

from infra.bootstrap.stack_accounts import (
    BUILDER_ACCOUNT,
    GUARD_ACCOUNT,
    GUARD_BUILD_ACCOUNT,
    JOB_ACCOUNT,
    stack_account_ids,
)
from infra.components.killswitch import ROLE_ID
from infra.config import load_config
from infra.preflight import clients
from infra.preflight.run import stack_accounts
from tests.fakes.oauth import write_service_account_key
from tests.preflight.conftest import ACCOUNT, EMAIL, PROJECT, STACK, Cloud
from tests.stack.conftest import stack_values

ROOT = Path(__file__).resolve().parents[2]
IDS = stack_account_ids(STACK)
JOB_EMAIL = f"{IDS[JOB_ACCOUNT]}@{PROJECT}.iam.gserviceaccount.com"


def lines(out: str, status: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(status + " ")]


def fixes(out: str) -> list[str]:
    return [
        line.strip().removeprefix("fix: ") for line in out.splitlines() if line.strip().startswith("fix: ")
    ]


def one_missing(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Run preflight: exit 1 with exactly one `missing` line and one fix (everything else ok); both."""
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    assert len(lines(out, "missing")) == 1 and not lines(out, "cannot tell"), out
    [fix] = fixes(out)
    return lines(out, "missing")[0], fix


def test_everything_present_is_ready(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    assert cloud.preflight() == 0
    out = capsys.readouterr().out
    assert not lines(out, "missing") and not lines(out, "cannot tell"), out
    assert f"user {EMAIL}" in out
    items = [line.split(":", 1)[0].removeprefix("ok").strip() for line in lines(out, "ok")]
    assert items == [
        "credentials",
        "project",
        "billing",
        "permissions on the project",
        *(
            f"service account {IDS[a]}"
            for a in (JOB_ACCOUNT, BUILDER_ACCOUNT, GUARD_ACCOUNT, GUARD_BUILD_ACCOUNT)
        ),
        "APIs",
        "kill-switch role",
        "quota, data-preparation job",
        "quota, training job",
        "budget rights",
        "Cloud Build region",
        "prices of the data-preparation job",
    ]
    # dev's unpriced L4 fallback under maxCostUsd: `up` skips it, said ahead of time (a note, still ready).
    (priced,) = [line for line in lines(out, "note") if "prices of the training job" in line]
    assert "`up` skips 1 of its 3 shapes: g2-standard-4 + 1 x NVIDIA_L4 (SPOT) in us-central1" in priced
    assert out.rstrip().endswith("ready for `pulumi up` (read the notes above)")
    # Each account read and tested by its own name; the project asked only for its own permissions.
    tested = [request.resource for method, request in cloud.iam.calls if method == "TestIamPermissions"]
    assert tested == [
        f"projects/{PROJECT}/serviceAccounts/{IDS[a]}@{PROJECT}.iam.gserviceaccount.com" for a in IDS
    ]
    [asked] = [request for method, request in cloud.projects.calls if method == "TestIamPermissions"]
    assert not {p for p in asked.permissions if p.startswith("iam.serviceAccounts.")} - {
        "iam.serviceAccounts.create",
        "iam.serviceAccounts.get",
    }


def test_a_missing_permission_is_one_line_naming_the_role_that_grants_it(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.caller.revoke(f"projects/{PROJECT}", "iam.serviceAccounts.create")
    line, fix = one_missing(cloud, capsys)
    assert line.endswith("`pulumi up` needs: iam.serviceAccounts.create")
    assert fix == (
        f"gcloud projects add-iam-policy-binding {PROJECT} --member=user:{EMAIL} "
        "--role=roles/iam.serviceAccountCreator (or the project's Owner, roles/owner, holds them all)"
    )


def test_no_act_as_on_the_job_account_is_one_line_granting_it_on_that_account(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.caller.revoke(f"projects/{PROJECT}/serviceAccounts/{JOB_EMAIL}", "iam.serviceAccounts.actAs")
    line, fix = one_missing(cloud, capsys)
    assert line == (
        f"missing      service account {IDS[JOB_ACCOUNT]}: {JOB_ACCOUNT}: "
        "not held on it: iam.serviceAccounts.actAs"
    )
    assert fix == (
        f"gcloud iam service-accounts add-iam-policy-binding {JOB_EMAIL} --member=user:{EMAIL} "
        "--role=roles/iam.serviceAccountUser"
    )


def test_act_as_held_on_the_project_reaches_the_account(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    # An Owner's act-as comes from the project: every account in it inherits it.
    cloud.caller.revoke(f"projects/{PROJECT}/serviceAccounts/{JOB_EMAIL}", "iam.serviceAccounts.actAs")
    cloud.caller.grant(f"projects/{PROJECT}", ["iam.serviceAccounts.actAs"])
    assert cloud.preflight() == 0, capsys.readouterr().out


def test_an_account_not_created_yet_is_missing_with_the_bootstrap(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    del cloud.iam.accounts[JOB_EMAIL]
    line, fix = one_missing(cloud, capsys)
    assert line.startswith(
        f"missing      service account {IDS[JOB_ACCOUNT]}: {JOB_ACCOUNT}: {JOB_EMAIL} does not exist"
    )
    assert "`up` would create it, then fail on iam.serviceAccounts.actAs" in line
    assert fix.startswith(
        f"for the bootstrap's deployStack ({STACK} here), an owner runs the bootstrap, which creates the "
        "stack's accounts and grants its deploy identity (vt-ci-deploy) act-as and admin on each: "
        "cd infra/bootstrap && pulumi up; "
    )
    assert f"gcloud iam service-accounts create {IDS[JOB_ACCOUNT]} --project={PROJECT}" in fix
    assert (
        f"gcloud iam service-accounts add-iam-policy-binding {JOB_EMAIL} --member=user:{EMAIL} "
        "--role=roles/iam.serviceAccountUser"
    ) in fix
    assert "gcloud projects add-iam-policy-binding" not in fix


def test_an_account_not_created_yet_is_ok_when_the_project_gives_its_rights(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    del cloud.iam.accounts[JOB_EMAIL]
    cloud.caller.grant(
        f"projects/{PROJECT}",
        ["iam.serviceAccounts.actAs", "iam.serviceAccounts.update", "iam.serviceAccounts.delete"],
    )
    assert cloud.preflight() == 0
    [line] = [line for line in lines(capsys.readouterr().out, "ok") if IDS[JOB_ACCOUNT] in line]
    assert "not created yet; `up` creates it" in line


def test_a_disabled_account_is_missing_with_the_enable_command(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.iam.add_account(PROJECT, IDS[JOB_ACCOUNT], disabled=True)
    line, fix = one_missing(cloud, capsys)
    assert "is disabled" in line
    assert fix == f"gcloud iam service-accounts enable {JOB_EMAIL}"


def test_accounts_the_caller_cannot_read_cannot_be_told(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    del cloud.iam.accounts[JOB_EMAIL]  # Google answers a missing account as an unreadable one here
    cloud.caller.revoke(f"projects/{PROJECT}", "iam.serviceAccounts.get")
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    told = [line.split(":", 1)[0].removeprefix("cannot tell").strip() for line in lines(out, "cannot tell")]
    assert told == [f"service account {IDS[a]}" for a in IDS]
    assert "iam.serviceAccounts.get (roles/iam.serviceAccountViewer)" in lines(out, "cannot tell")[0]


def test_only_the_accounts_the_stack_has_are_checked() -> None:
    cfg = load_config(
        stack_values(
            "dev", gcpProject=PROJECT, billingAccount=ACCOUNT, killSwitch=False, imageBuilder="docker"
        ),
        STACK,
    )
    [job] = stack_accounts(cfg)
    assert (job.purpose, job.account_id) == (JOB_ACCOUNT, IDS[JOB_ACCOUNT])
    assert job.needed == {
        "iam.serviceAccounts.actAs": "roles/iam.serviceAccountUser",
        "iam.serviceAccounts.delete": "vertexTrainingStackAccount",
        "iam.serviceAccounts.update": "vertexTrainingStackAccount",
    }
    full = load_config(stack_values("dev", gcpProject=PROJECT, billingAccount=ACCOUNT), STACK)
    guard = next(a for a in stack_accounts(full) if a.purpose == GUARD_ACCOUNT)
    assert guard.needed["iam.serviceAccounts.setIamPolicy"] == "roles/iam.serviceAccountAdmin"


def test_a_disabled_api_is_one_line_with_the_enable_command(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.usage.disable(PROJECT, "cloudfunctions.googleapis.com")
    line, fix = one_missing(cloud, capsys)
    assert "cloudfunctions.googleapis.com" in line and "you may enable them" in line
    assert fix == f"gcloud services enable cloudfunctions.googleapis.com --project={PROJECT}"


def test_a_disabled_api_says_when_the_caller_may_not_enable_it(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.usage.disable(PROJECT, "aiplatform.googleapis.com")
    cloud.caller.revoke(f"projects/{PROJECT}", "serviceusage.services.enable")
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    api_line = next(line for line in lines(out, "missing") if "APIs:" in line)
    assert "you may not enable them" in api_line


def test_a_billing_account_without_budget_rights_is_one_line(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.caller.revoke(f"billingAccounts/{ACCOUNT}", "billing.budgets.create")
    line, fix = one_missing(cloud, capsys)
    assert "budget rights" in line and "billing.budgets.create" in line
    assert fix.startswith(
        "an administrator of the billing account runs: gcloud billing accounts add-iam-policy-binding "
        f"{ACCOUNT} --member=user:{EMAIL} --role=roles/billing.costsManager"
    )


def test_a_missing_kill_switch_role_is_one_line_with_the_create_command(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.iam.roles.clear()
    line, fix = one_missing(cloud, capsys)
    assert f"projects/{PROJECT}/roles/{ROLE_ID} does not exist" in line
    assert fix.startswith(f"gcloud iam roles create {ROLE_ID} --project={PROJECT} --stage=GA")
    assert "aiplatform.customJobs.cancel" in fix


def test_a_deleted_kill_switch_role_is_undeleted(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.iam.add_role(PROJECT, ROLE_ID, ("aiplatform.customJobs.list",), deleted=True)
    assert cloud.preflight() == 1
    assert fixes(capsys.readouterr().out) == [f"gcloud iam roles undelete {ROLE_ID} --project={PROJECT}"]


def test_a_zero_gpu_quota_is_one_line_with_the_request_command(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.write_stack(spot=False, fallbacks=None)
    quota = "CustomModelTrainingT4GPUsPerProjectPerRegion"
    cloud.quotas.set_quota(PROJECT, quota, default=8, regions={"us-central1": 0})
    line, fix = one_missing(cloud, capsys)
    assert "quota, training job" in line and f"{quota} in us-central1 is 0, it needs 1" in line
    assert fix.startswith(
        "gcloud beta quotas preferences create --service=aiplatform.googleapis.com "
        f"--quota-id={quota} --dimensions=region=us-central1 --preferred-value=1 --project={PROJECT}"
    )


def test_a_shape_without_quota_is_skipped_as_up_skips_it(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    # An L4 on FLEX_START (the Preemptible L4 quota, 0 here), then the same L4 on demand, which has quota.
    cloud.write_stack(
        spot=None,
        machineType="g2-standard-4",
        acceleratorType="NVIDIA_L4",
        schedulingStrategy="FLEX_START",
        maxWaitSeconds=3600,
        fallbacks=[{"schedulingStrategy": "STANDARD"}],
        # The cited price table has no L4: under maxCostUsd both shapes would be skipped for their price.
        allowUnpricedShapes=True,
    )
    cloud.quotas.set_quota(PROJECT, "CustomModelTrainingPreemptibleL4GPUsPerProjectPerRegion", default=0)
    assert cloud.preflight() == 0
    out = capsys.readouterr().out
    line = next(line for line in lines(out, "ok") if "quota, training job" in line)
    assert line.split(": ", 1)[1].startswith("fallback 1 g2-standard-4 + 1 x NVIDIA_L4 (STANDARD)")
    assert "PreemptibleL4GPUsPerProjectPerRegion in us-central1 is 0" in line and "`up` skips it" in line


def test_a_short_spot_quota_is_a_note_that_does_not_stop_up(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Vertex source ties Spot training to the Preemptible quota: `up` would submit the job, so preflight
    says it and still exits 0."""
    cloud.write_stack(fallbacks=None)
    cloud.quotas.set_quota(PROJECT, "CustomModelTrainingPreemptibleT4GPUsPerProjectPerRegion", default=0)
    assert cloud.preflight() == 0
    out = capsys.readouterr().out
    [line] = lines(out, "note")
    assert "Spot" in line and not lines(out, "missing") and not lines(out, "cannot tell")
    assert fixes(out)[0].startswith("gcloud beta quotas preferences create")
    assert out.splitlines()[-1].endswith(", 1 note: ready for `pulumi up` (read the notes above)")
    assert cloud.preflight("--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is True
    assert [check["item"] for check in report["checks"] if check["status"] == "note"] == [
        "quota, training job"
    ]


def test_unreadable_quotas_cannot_be_told(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.quotas.denied = True
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    assert [line.split(":")[0].removeprefix("cannot tell").strip() for line in lines(out, "cannot tell")] == [
        "quota, data-preparation job",
        "quota, training job",
    ]
    assert "PERMISSION_DENIED" in lines(out, "cannot tell")[0] and not lines(out, "missing")
    assert fixes(out)[0].startswith("gcloud beta quotas info describe CustomModelTrainingPreemptibleCPUs")


def test_a_study_needs_quota_for_its_parallel_trials(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    study = {
        "metric": "val_accuracy",
        "goal": "MAXIMIZE",
        "algorithm": "grid",
        "maxTrials": 4,
        "parallelTrials": 3,
        "parameters": {"learningRate": {"values": [0.01, 0.001]}},
    }
    cloud.write_stack(spot=False, fallbacks=None, tuning=study)
    cloud.quotas.set_quota(PROJECT, "CustomModelTrainingT4GPUsPerProjectPerRegion", default=2)
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    [line] = lines(out, "missing")
    assert "quota, tuning study (3 trials at once)" in line and "is 2, it needs 3" in line


def test_billing_disabled_and_another_account(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.billing.link(PROJECT, "")
    assert cloud.preflight() == 1
    assert fixes(capsys.readouterr().out) == [
        f"gcloud billing projects link {PROJECT} --billing-account={ACCOUNT}"
    ]
    cloud.billing.link(PROJECT, "111111-222222-333333")
    assert cloud.preflight() == 1
    assert fixes(capsys.readouterr().out) == [
        f"pulumi config set vertex-training:billingAccount 111111-222222-333333 --stack {STACK}"
    ]


def test_an_unknown_project_is_missing(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.projects.projects.clear()
    assert cloud.preflight() == 1
    [line] = lines(capsys.readouterr().out, "missing")
    assert f"project: {PROJECT} does not exist or you cannot see it" in line


def test_an_unreachable_service_cannot_be_told(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.usage.fail("BatchGetServices", grpc.StatusCode.INTERNAL, message="backend error")
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    assert lines(out, "cannot tell") == ["cannot tell  APIs: INTERNAL: backend error"]
    assert not lines(out, "missing")


def test_revoked_credentials_say_to_log_in_again(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.tokens.write_adc(cloud.adc, refresh_token="revoked")
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    assert "invalid_grant" in lines(out, "missing")[0]
    assert fixes(out) == ["gcloud auth application-default login"]


def test_json_is_the_same_as_one_object(cloud: Cloud, capsys: pytest.CaptureFixture[str]) -> None:
    cloud.iam.roles.clear()
    assert cloud.preflight("--json") == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["stack"], report["project"], report["ready"]) == (STACK, PROJECT, False)
    [role] = [check for check in report["checks"] if check["status"] == "missing"]
    assert role["item"] == "kill-switch role" and role["fix"].startswith("gcloud iam roles create")


def test_a_local_stack_needs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from infra.preflight.__main__ import main

    assert main(["--stack", "local"], root=ROOT) == 0
    assert lines(capsys.readouterr().out, "ok")


def test_a_stack_without_its_file_is_missing(
    cloud: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from infra.preflight.__main__ import main

    root = tmp_path / "elsewhere"
    root.mkdir()
    (root / "Pulumi.other.yaml").write_text("config: {}\n")
    assert main(["--stack", "nosuch"], root=root) == 1
    out = capsys.readouterr().out
    # The same words as every command that reads a stack file (infra/config/stack_file.py).
    [line] = lines(out, "missing")
    assert line.endswith(f"(stack name): no stack file Pulumi.nosuch.yaml in {root}")
    assert [status.split(":")[0] for status in lines(out, "ok")] == ["ok           credentials"]
    assert fixes(out) == ["name one of the stacks here (other), or `pulumi stack init` one"]


def test_a_bad_stack_configuration_is_one_line_with_the_loaders_problem_and_fix(
    cloud: Cloud, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from infra.preflight.__main__ import main

    # The committed dev stack as shipped: both example ids, named in one line with both commands.
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    assert main(["--stack", "dev"], root=tmp_path) == 1
    out = capsys.readouterr().out
    # Who you are is said first, whatever the stack file holds (the credentials need no project).
    [credentials] = lines(out, "ok")
    assert credentials.split(None, 1)[1].startswith(
        f"credentials: Application Default Credentials of user {EMAIL}"
    )
    [line] = lines(out, "missing")
    assert line.split(None, 1)[1].startswith(
        "stack configuration: vertex-training:gcpProject and vertex-training:billingAccount: "
        "'my-training-dev' is an example"
    )
    assert ". Fix:" not in out
    [fix] = fixes(out)
    assert fix.startswith("run `pulumi config set --stack dev vertex-training:gcpProject <your-project-id>`")
    assert "vertex-training:billingAccount <ACCOUNT_ID>" in fix


def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ADC file where gcloud keeps it, and not on Google Compute Engine (no metadata server)."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "true")


def test_placeholder_ids_without_credentials_say_both_in_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ADC and the example ids: the login command and the config commands, each on its own line."""
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    from infra.preflight.__main__ import main

    no_credentials(monkeypatch, tmp_path)
    assert main(["--stack", "dev", "--json"], root=tmp_path) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(c["item"], c["status"]) for c in report["checks"]] == [
        ("credentials", "missing"),
        ("stack configuration", "missing"),
    ]
    assert report["checks"][0]["fix"] == "gcloud auth application-default login"
    assert "vertex-training:gcpProject" in report["checks"][1]["detail"]


def test_every_configuration_finding_is_a_line_of_its_own() -> None:
    """All problems of a stack file (ConfigErrors) print whole: each key with its problem and fix, none
    dropped after the first."""
    from infra.config import ConfigError
    from infra.config.reader import ConfigErrors, problems
    from infra.preflight.__main__ import _config_lines

    first = ConfigError("region", "'us-central' is not a region", "use a region")
    second = ConfigError("acceleratorCount", "3 is not a count n1-standard-4 takes", "use 1, 2 or 4")
    lines = _config_lines(problems(ConfigErrors([first, second])))
    assert [line.detail for line in lines] == [f"{e.name}: {e.problem}" for e in (first, second)]
    assert [line.fix for line in lines] == [first.fix, second.fix]


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infra.preflight", "--stack", STACK, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_from_the_project_root_as_a_service_account(cloud: Cloud, tmp_path: Path) -> None:
    account = f"vt-ci-deploy@{PROJECT}.iam.gserviceaccount.com"
    key = write_service_account_key(tmp_path / "key.json", cloud.tokens.start(), account)
    done = _run(cloud.root, {**os.environ, "GOOGLE_APPLICATION_CREDENTIALS": str(key)}, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ready"] is True
    assert f"service account {account}" in report["checks"][0]["detail"]


def test_no_credentials_gives_the_login_command(
    cloud: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    no_credentials(monkeypatch, tmp_path)
    assert cloud.preflight() == 1
    out = capsys.readouterr().out
    assert lines(out, "missing") == ["missing      credentials: no Application Default Credentials found"]
    assert fixes(out) == ["gcloud auth application-default login"]


def test_make_preflight_runs_the_command_for_its_stack() -> None:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "preflight", "STACK=dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == ".venv/bin/python -m infra.preflight --stack dev"


def test_the_run_docs_stack_md_shows_is_what_preflight_prints(
    cloud: Cloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.iam.roles.clear()
    cloud.usage.disable(PROJECT, "cloudfunctions.googleapis.com")
    cloud.caller.revoke(f"billingAccounts/{ACCOUNT}", "billing.budgets.create")
    cloud.caller.revoke(f"projects/{PROJECT}/serviceAccounts/{JOB_EMAIL}", "iam.serviceAccounts.actAs")
    assert cloud.preflight() == 1
    printed = capsys.readouterr().out.splitlines()
    # The docs shorten the role's create command after its --stage flag.
    shortened = [
        line[: line.index("--stage=GA") + len("--stage=GA")] + " --title=... (shortened here)"
        if "gcloud iam roles create" in line
        else line
        for line in printed
    ]
    docs = (ROOT / "docs" / "stack.md").read_text()
    start = docs.index("```\nPreflight of stack pf") + 4
    assert docs[start : docs.index("\n```", start)].splitlines() == shortened


def test_a_missing_account_is_not_found_only_when_named_with_its_project(cloud: Cloud) -> None:
    # Why preflight names accounts with the project id: Google answers the `-` wildcard form 403 instead.
    iam = clients.iam(PROJECT)
    email = f"vt-nosuch@{PROJECT}.iam.gserviceaccount.com"
    with pytest.raises(gexc.NotFound):
        iam.get_service_account(name=f"projects/{PROJECT}/serviceAccounts/{email}")
    with pytest.raises(gexc.PermissionDenied):
        iam.get_service_account(name=f"projects/-/serviceAccounts/{email}")
    assert iam.get_service_account(name=f"projects/-/serviceAccounts/{JOB_EMAIL}").email == JOB_EMAIL


def test_a_custom_account_role_is_granted_by_its_full_name() -> None:
    from infra.preflight.accounts import grant_on_account

    command = grant_on_account(
        "vt-dev-job@p1.iam.gserviceaccount.com", "user:a@b.c", "vertexTrainingStackAccount"
    )
    assert command.endswith("--role=projects/p1/roles/vertexTrainingStackAccount")
    assert grant_on_account(
        "x@p1.iam.gserviceaccount.com", "user:a@b.c", "roles/iam.serviceAccountUser"
    ).endswith("--role=roles/iam.serviceAccountUser")


def test_a_region_the_gpu_table_does_not_list_is_a_note_whatever_else_is_read(
    cloud: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """V100 is not listed for training in us-east4 (Vertex AI Locations, read 2026-11-25): a note, not a
    stop, printed with the checks, and printed too when the credentials are gone."""
    cloud.write_stack(acceleratorType="NVIDIA_TESLA_V100", fallbackRegions=["us-east4"])
    assert cloud.preflight() == 0
    out = capsys.readouterr().out
    [line] = [line for line in lines(out, "note") if "GPU regions" in line]
    assert "GPU regions: Vertex AI's Locations table read 2026-11-25" in line
    assert "does not list NVIDIA_TESLA_V100 for training in us-east4" in line
    no_credentials(monkeypatch, tmp_path)
    cloud.preflight("--json")
    items = [(c["item"], c["status"]) for c in json.loads(capsys.readouterr().out)["checks"]]
    assert items == [
        ("credentials", "missing"),
        ("Cloud Build region", "ok"),
        ("GPU regions", "note"),
        # Without credentials the cited table alone prices: us-east4 and the L4 are not in it.
        ("prices of the data-preparation job", "ok"),
        ("prices of the training job", "note"),
    ]
