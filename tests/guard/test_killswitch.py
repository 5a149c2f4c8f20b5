"""The KillSwitch component under Pulumi's mock runtime: function, identity, trigger, source archive."""

from __future__ import annotations

import ast
import re
from importlib import metadata
from pathlib import Path

import pulumi
import pytest

from infra.components import killswitch
from infra.components.killswitch import KillSwitch, KillSwitchArgs, function_environment
from infra.guard import job_kinds, main
from infra.least_privilege import custom_roles
from tests.fakes.pulumi_mocks import MockedRun, object_generation, run_program

LABELS = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": "dev"}
TOPIC = "projects/test-project/topics/vertex-training-dev-budget"
FUNCTION = "gcp:cloudfunctionsv2/function:Function"
ACCOUNT = "gcp:serviceaccount/account:Account"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
REPOSITORY_MEMBER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
REPOSITORY = "projects/test-project/locations/us-central1/repositories/vertex-training-dev"
RUN_INVOKER = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
OBJECT = "gcp:storage/bucketObject:BucketObject"
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"


def args(**override: object) -> KillSwitchArgs:
    values: dict[str, object] = {
        "project": "test-project",
        "region": "us-central1",
        "pulumi_project": "vertex-training",
        "pulumi_stack": "dev",
        "bucket": "test-project-vertex-training-dev",
        "topic": TOPIC,
        "labels": LABELS,
        "threshold": 0.9,
        "docker_repository": REPOSITORY,
    }
    values.update(override)
    return KillSwitchArgs(**values)  # type: ignore[arg-type]


SLEEP = "time:index/sleep:Sleep"


@pytest.fixture(scope="module")
def run() -> MockedRun:
    def program() -> dict[str, pulumi.Output[str]]:
        guard = KillSwitch("kill-switch", args())
        return {"function": guard.function_name, "account": guard.service_account_email}

    return run_program(program)


def test_every_resource_is_a_child_of_the_component(run: MockedRun) -> None:
    component = run.one("vertex-training:guard:KillSwitch")
    children = [r for r in run.resources if r is not component]
    assert {r.type for r in children} == {
        FUNCTION,
        ACCOUNT,
        PROJECT_MEMBER,
        RUN_INVOKER,
        OBJECT,
        REPOSITORY_MEMBER,
        SA_MEMBER,
    }
    assert not run.by_type("gcp:projects/iAMCustomRole:IAMCustomRole"), "the role outlives every stack"
    assert all(r.parent == component.urn for r in children)


def test_children_wait_for_what_the_component_waits_for() -> None:
    """On a fresh project the function must not be created before its APIs are enabled."""

    def program() -> None:
        api = pulumi.CustomResource("gcp:projects/service:Service", "cloudfunctions-api")
        KillSwitch("kill-switch", args(), pulumi.ResourceOptions(depends_on=[api]))

    run = run_program(program)
    api_urn = run.one("gcp:projects/service:Service").urn
    children = [r for r in run.resources if r.parent == run.one("vertex-training:guard:KillSwitch").urn]
    assert children and all(api_urn in r.dependencies for r in children)


def test_identity_can_only_list_get_and_cancel_the_stacks_jobs_and_undeploy_its_models(
    run: MockedRun,
) -> None:
    # REST reference of hyperparameterTuningJobs.cancel: "aiplatform.hyperparameterTuningJobs.cancel"
    # (read 2026-11-22), of batchPredictionJobs.cancel: "aiplatform.batchPredictionJobs.cancel" (read
    # 2026-11-26); list and get follow the same pattern as customJobs'. Endpoints: list and undeploy only
    # (roles/aiplatform.user's names, iam-dataset at 02b6c7c8, read 2026-11-29): no deploy, no delete.
    assert sorted(killswitch.PERMISSIONS) == [
        "aiplatform.batchPredictionJobs.cancel",
        "aiplatform.batchPredictionJobs.get",
        "aiplatform.batchPredictionJobs.list",
        "aiplatform.customJobs.cancel",
        "aiplatform.customJobs.get",
        "aiplatform.customJobs.list",
        "aiplatform.endpoints.list",
        "aiplatform.endpoints.undeploy",
        "aiplatform.hyperparameterTuningJobs.cancel",
        "aiplatform.hyperparameterTuningJobs.get",
        "aiplatform.hyperparameterTuningJobs.list",
    ]
    email = run.outputs["account"]
    member = f"serviceAccount:{email}"
    # Exactly one project-level grant, and it is the shared custom role (created by the bootstrap stack).
    (grant,) = [g for g in run.by_type(PROJECT_MEMBER) if g.inputs["member"] == member]
    assert grant.inputs["role"] == "projects/test-project/roles/vertexTrainingKillSwitch"
    # The only other grant: invoking this one function's Cloud Run service.
    (invoker,) = run.by_type(RUN_INVOKER)
    assert invoker.inputs == {
        "project": "test-project",
        "location": "us-central1",
        "name": run.outputs["function"],
        "role": "roles/run.invoker",
        "member": member,
    }
    grants = [r for r in run.resources if "iam" in r.type.lower() and r.inputs["member"] == member]
    assert len(grants) == 2


def test_the_build_runs_as_its_own_identity_with_exactly_its_grants(run: MockedRun) -> None:
    """Not the Compute Engine default account (no roles in new organisations): logs, image, source only."""
    (account,) = [a for a in run.by_type(ACCOUNT) if a.inputs["accountId"].startswith("vt-build-")]
    email = f"{account.inputs['accountId']}@test-project.iam.gserviceaccount.com"
    member = f"serviceAccount:{email}"
    assert run.one(FUNCTION).inputs["buildConfig"]["serviceAccount"] == (
        f"projects/test-project/serviceAccounts/{email}"
    )
    grants = {(r.type, r.inputs["role"]) for r in run.resources if r.inputs.get("member") == member}
    assert grants == {
        (PROJECT_MEMBER, "roles/logging.logWriter"),
        (REPOSITORY_MEMBER, "roles/artifactregistry.writer"),
        (PROJECT_MEMBER, "roles/storage.objectAdmin"),  # as the build-service-account page lists it
    }
    (repository,) = run.by_type(REPOSITORY_MEMBER)
    assert repository.inputs["repository"] == run.one(FUNCTION).inputs["buildConfig"]["dockerRepository"]
    # The function's build starts after the new grants, with no fixed wait: its creation is retried while
    # they are still refused (components/propagation.py).
    assert not run.by_type(SLEEP)
    assert run.one(FUNCTION).error_hooks == ["kill-switch-grants"]
    (source,) = [g for g in run.by_type(PROJECT_MEMBER) if g.inputs["role"] == "roles/storage.objectAdmin"]
    archive = run.one(OBJECT).inputs
    assert archive["name"].startswith(killswitch.SOURCE_PREFIX)
    # Only Cloud Functions' source copies (project number 123456789012 in the mocks) and the archive's prefix:
    # the build identity cannot read the training data beside the archive, nor any other bucket.
    sources = "projects/_/buckets/gcf-v2-sources-123456789012-us-central1"
    assert source.inputs["condition"]["expression"] == (
        f'resource.name == "{sources}" || resource.name.startsWith("{sources}/") '
        f'|| resource.name.startsWith("projects/_/buckets/{archive["bucket"]}/objects/kill-switch/")'
    )
    for grant in (r for r in run.resources if r.inputs.get("member") == member):
        assert grant.urn in run.one(FUNCTION).dependencies, "the build starts after its grants"


def test_function_runs_the_guard_source_as_its_own_identity(run: MockedRun) -> None:
    fn = run.one(FUNCTION).inputs
    assert fn["name"] == run.outputs["function"]
    assert (fn["location"], fn["project"], fn["labels"]) == ("us-central1", "test-project", LABELS)
    build = fn["buildConfig"]
    assert build["runtime"] == "python312"
    assert callable(getattr(main, build["entryPoint"]))
    obj = run.one(OBJECT)
    # The generation this up uploaded: the job account may write the bucket the archive lives in.
    assert build["source"]["storageSource"] == {
        "bucket": obj.inputs["bucket"],
        "object": obj.inputs["name"],
        "generation": object_generation(obj.name),
    }
    service = fn["serviceConfig"]
    assert service["serviceAccountEmail"] == run.outputs["account"]
    assert service["ingressSettings"] == "ALLOW_INTERNAL_ONLY"
    # What the deployment sets is exactly what the handler reads.
    config = main.load_config(service["environmentVariables"])
    assert config == main.GuardConfig(
        "test-project", "us-central1", "vertex-training", "dev", 0.9, ("us-central1",)
    )


def test_the_function_is_told_every_region_of_the_stacks_chains() -> None:
    env = function_environment(args(regions=("us-central1", "us-east4", "europe-west4")))
    assert env["KILL_SWITCH_REGIONS"] == "us-central1,us-east4,europe-west4"
    assert main.load_config(env).all_regions == ("us-central1", "us-east4", "europe-west4")
    # A function deployed before the variable existed looks in its own region only.
    legacy = {k: v for k, v in env.items() if k != "KILL_SWITCH_REGIONS"}
    assert main.load_config(legacy).all_regions == ("us-central1",)


def test_trigger_is_the_budget_topic_with_retries(run: MockedRun) -> None:
    trigger = run.one(FUNCTION).inputs["eventTrigger"]
    assert trigger == {
        "eventType": "google.cloud.pubsub.topic.v1.messagePublished",
        "pubsubTopic": TOPIC,
        "retryPolicy": "RETRY_POLICY_RETRY",
        "serviceAccountEmail": run.outputs["account"],
        "triggerRegion": "us-central1",
    }


def test_function_image_goes_to_the_stacks_repository(run: MockedRun) -> None:
    assert run.one(FUNCTION).inputs["buildConfig"]["dockerRepository"] == REPOSITORY


def test_function_waits_for_its_permissions(run: MockedRun) -> None:
    for grant in run.by_type(PROJECT_MEMBER):
        assert grant.urn in run.one(FUNCTION).dependencies


def test_source_archive_holds_only_the_function_files(run: MockedRun) -> None:
    obj = run.one(OBJECT).inputs
    assert obj["bucket"] == "test-project-vertex-training-dev"
    assert obj["name"] == f"kill-switch/source-{killswitch.source_digest()}.zip"
    archive = obj["source"]
    assert isinstance(archive, pulumi.AssetArchive)
    assert sorted(archive.assets) == [
        "deployed_models.py",
        "job_kinds.py",
        "live_jobs.py",
        "main.py",
        "requirements.txt",
    ]
    for name, asset in archive.assets.items():
        assert Path(asset.path) == killswitch.source_path(name)
    # The runtime pip-installs requirements.txt: what it gets is the hashed lock (tests/ci/test_locks.py).
    assert Path(archive.assets["requirements.txt"].path).name == "requirements.lock"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in a Python file: level 1 is `from . import x` / `from .x import`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found += [(node.level, node.module or alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
    return found


def test_the_archive_holds_every_module_the_function_imports_and_nothing_from_infra() -> None:
    """The function runs from the archive alone: a sibling module it imports must be in it, and `infra` (not
    deployed) must never be imported."""
    sources = [killswitch.GUARD_DIR / name for name in killswitch.SOURCE_FILES if name.endswith(".py")]
    imports = [found for path in sources for found in _imports(path)]
    siblings = {f"{module}.py" for level, module in imports if level == 1}
    assert siblings == {"deployed_models.py", "job_kinds.py", "live_jobs.py"}
    assert siblings <= set(killswitch.SOURCE_FILES)
    assert not [module for level, module in imports if level == 0 and module.split(".")[0] == "infra"]


def test_the_role_holds_list_get_and_cancel_of_every_kind_in_the_one_table() -> None:
    permissions = set(killswitch.PERMISSIONS)
    for kind in job_kinds.JOB_KINDS:
        assert {f"{kind.permission}.{verb}" for verb in ("list", "get", "cancel")} <= permissions
    assert len(permissions) == 3 * len(job_kinds.JOB_KINDS) + len(custom_roles.ENDPOINT_PERMISSIONS)


def test_source_name_changes_with_the_source(tmp_path: Path) -> None:
    for name in killswitch.SOURCE_FILES:
        uploaded = killswitch.source_path(name, tmp_path)
        uploaded.write_bytes(killswitch.source_path(name).read_bytes())
    same = killswitch.source_digest(tmp_path)
    assert same == killswitch.source_digest()
    (tmp_path / "main.py").write_text((tmp_path / "main.py").read_text() + "\n# changed\n")
    assert killswitch.source_digest(tmp_path) != same


@pytest.mark.parametrize("stack", ["dev", "prod", "My_Feature.Branch-2026", "x" * 80, "__"])
def test_names_are_valid_and_distinct_per_stack(stack: str) -> None:
    names = killswitch.guard_names("vertex-training", stack)
    for account_id in (names.account_id, names.build_account_id):
        assert re.fullmatch(r"[a-z](?:[-a-z0-9]{4,28}[a-z0-9])", account_id), account_id
    assert names.account_id != names.build_account_id
    assert re.fullmatch(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?", names.function), names.function
    assert names != killswitch.guard_names("vertex-training", stack + "2")
    assert names != killswitch.guard_names("other-project", stack)


@pytest.mark.parametrize("threshold", [0.0, -1.0, float("nan")])
def test_threshold_must_be_positive(threshold: float) -> None:
    with pytest.raises(ValueError, match="killSwitchThreshold"):
        run_program(lambda: KillSwitch("kill-switch", args(threshold=threshold)))


def test_runtime_requirements_are_the_tested_versions() -> None:
    pins = dict(
        line.split("==")
        for line in (killswitch.GUARD_DIR / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert set(pins) == {"functions-framework", "google-cloud-aiplatform"}
    assert all(metadata.version(name) == version for name, version in pins.items()), pins


def test_required_apis_cover_the_deployment() -> None:
    assert {
        "cloudfunctions.googleapis.com",
        "run.googleapis.com",
        "cloudbuild.googleapis.com",
        "eventarc.googleapis.com",
        "pubsub.googleapis.com",
        "artifactregistry.googleapis.com",
        "iam.googleapis.com",
    } <= set(killswitch.REQUIRED_APIS)


def test_the_pubsub_agent_may_mint_tokens_for_the_trigger_account_only(run: MockedRun) -> None:
    """Pub/Sub agents created before 8 April 2021 need Token Creator to push with OIDC tokens."""
    (grant,) = run.by_type(SA_MEMBER)
    (trigger,) = [a for a in run.by_type(ACCOUNT) if a.inputs["accountId"].startswith("vt-guard-")]
    assert grant.inputs["role"] == "roles/iam.serviceAccountTokenCreator"
    # Mocked project number 123456789012; the grant is on the trigger's account, not on the project.
    assert (
        grant.inputs["member"] == "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"
    )
    assert grant.inputs["serviceAccountId"] == trigger.name  # the mocks' `name` output of that account
    assert grant.urn in run.one(FUNCTION).dependencies
