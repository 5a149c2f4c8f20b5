"""What Google Cloud enforces and the mock runtime does not: invariants a fresh project's first `pulumi up`
(and a second stack, and destroy + up) depends on. Each would have caught one of issue 10's defects."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra.components import budget, identity, killswitch, registry
from infra.config import ConfigError, load_config
from infra.stack import build
from infra.vertex.model.resource import RESOURCE_TYPE as MODEL_VERSION
from tests.fakes.pulumi_mocks import MockedRun, Registered, object_generation, run_program
from tests.iam_facts import permissions
from tests.stack.conftest import ROOT, cached_run, stack_config, stack_values

SERVICE_IDENTITY = "gcp:projects/serviceIdentity:ServiceIdentity"
SLEEP = "time:index/sleep:Sleep"
# The longest names the configuration accepts: a 30-character project id and a 15-character stack.
LONGEST_PROJECT = "p" + "-" * 2 + "x" * 26 + "9"
LONGEST_STACK = "s" + "t" * 14

# (type, input) -> (pattern, source). The pattern encodes the API's length and character limits.
NAME_LIMITS: dict[tuple[str, str], tuple[str, str]] = {
    ("gcp:storage/bucket:Bucket", "name"): (
        r"[a-z0-9][-a-z0-9_.]{1,61}[a-z0-9]",
        "https://cloud.google.com/storage/docs/buckets#naming",
    ),
    ("gcp:serviceaccount/account:Account", "accountId"): (
        r"[a-z][-a-z0-9]{4,28}[a-z0-9]",
        "https://cloud.google.com/iam/docs/service-accounts-create",
    ),
    ("gcp:artifactregistry/repository:Repository", "repositoryId"): (
        r"[a-z][-a-z0-9]{0,61}[a-z0-9]",
        "https://cloud.google.com/artifact-registry/docs/repositories/create-repos",
    ),
    ("gcp:pubsub/topic:Topic", "name"): (
        r"[A-Za-z][-A-Za-z0-9_.~+%]{2,254}",
        "https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names",
    ),
    ("gcp:billing/budget:Budget", "displayName"): (
        r".{1,60}",
        "https://cloud.google.com/billing/docs/reference/budget/rest/v1/billingAccounts.budgets",
    ),
    ("gcp:cloudfunctionsv2/function:Function", "name"): (
        r"[a-z][-a-z0-9]{0,61}[a-z0-9]",
        "https://cloud.google.com/functions/docs/reference/rest/v2/projects.locations.functions",
    ),
    ("gcp:vertex/aiTensorboard:AiTensorboard", "displayName"): (
        r".{1,128}",
        "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.tensorboards",
    ),
}


def longest_run(stack_file: str) -> MockedRun:
    cfg = load_config(stack_values(stack_file, gcpProject=LONGEST_PROJECT), LONGEST_STACK)
    assert (len(cfg.gcp_project), len(cfg.stack)) == (30, 15), "the longest the configuration accepts"
    return run_program(lambda: build(cfg), project="vertex-training", stack=LONGEST_STACK)


def member(run: MockedRun, account: Registered) -> str:
    project = account.inputs["project"]
    return f"serviceAccount:{account.inputs['accountId']}@{project}.iam.gserviceaccount.com"


def account(run: MockedRun, prefix: str) -> Registered:
    (found,) = [
        a
        for a in run.by_type("gcp:serviceaccount/account:Account")
        if a.inputs["accountId"].startswith(prefix)
    ]
    return found


def grants_of(run: MockedRun, principal: str) -> list[Registered]:
    return [r for r in run.resources if r.inputs.get("member") == principal]


def test_the_job_identity_can_read_its_buckets_metadata(cloud_stack: tuple[str, MockedRun]) -> None:
    """TensorFlow's GCS filesystem GETs the bucket when it makes the output folders (storage.buckets.get)."""
    stack, run = cloud_stack
    job = member(run, account(run, identity.account_id(stack)))
    bucket = stack_config(stack).bucket_name
    on_bucket = [g for g in grants_of(run, job) if g.type == "gcp:storage/bucketIAMMember:BucketIAMMember"]
    assert {g.inputs["bucket"] for g in on_bucket} == {bucket}, "grants on this bucket only"
    needed = {"storage.buckets.get", "storage.objects.create", "storage.objects.get", "storage.objects.list"}
    needed.add("storage.objects.delete")
    assert needed <= permissions(g.inputs["role"] for g in on_bucket)


@pytest.mark.parametrize("stack_file", ["dev", "prod"])
def test_every_name_fits_its_api_limit_for_the_longest_project_and_stack(stack_file: str) -> None:
    run = longest_run(stack_file)
    checked = set()
    for resource in run.resources:
        for (typ, key), (pattern, source) in NAME_LIMITS.items():
            if resource.type == typ:
                value = resource.inputs[key]
                assert re.fullmatch(pattern, value), f"{typ}.{key} = {value!r} ({len(value)}) breaks {source}"
                checked.add((typ, key))
        for key, value in (resource.inputs.get("labels") or {}).items():
            assert len(key) <= 63 and len(str(value)) <= 63, f"label {key}={value} on {resource.name}"
    expected = set(NAME_LIMITS) - (
        {("gcp:vertex/aiTensorboard:AiTensorboard", "displayName")} if stack_file == "dev" else set()
    )
    assert checked == expected, "every limited name was seen"
    assert len(budget.display_name(LONGEST_STACK, LONGEST_PROJECT)) <= budget.DISPLAY_NAME_MAX


def test_nothing_longer_is_accepted() -> None:
    """The limits above hold because the configuration refuses longer project ids and stack names."""
    with pytest.raises(ConfigError):
        load_config(stack_values("dev", gcpProject=LONGEST_PROJECT + "x"), LONGEST_STACK)
    with pytest.raises(ConfigError):
        load_config(stack_values("dev", gcpProject=LONGEST_PROJECT), LONGEST_STACK + "x")


def test_two_stacks_in_one_project_use_distinct_repositories() -> None:
    assert registry.repository_id("dev") != registry.repository_id("prod")
    repositories = {
        cached_run(s).one("gcp:artifactregistry/repository:Repository").inputs["repositoryId"]
        for s in ("dev", "prod")
    }
    assert len(repositories) == 2


def test_the_image_is_referenced_by_digest_alone(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    ref = run.outputs["image_ref"]
    host = f"{cfg.region}-docker.pkg.dev/{cfg.gcp_project}/{registry.repository_id(stack)}"
    assert re.fullmatch(re.escape(host) + r"/trainer@sha256:[0-9a-f]{64}", ref), ref


def test_the_function_build_identity_exists_with_exactly_its_grants(
    cloud_stack: tuple[str, MockedRun],
) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    build_account = account(run, "vt-build-")
    principal = member(run, build_account)
    function = run.one("gcp:cloudfunctionsv2/function:Function")
    assert function.inputs["buildConfig"]["serviceAccount"].endswith("/" + principal.split(":", 1)[1])
    # The build takes the generation this up uploaded, not whatever the (job-writable) bucket holds then.
    (archive,) = [
        r for r in run.by_type("gcp:storage/bucketObject:BucketObject") if r.name.endswith("-source")
    ]
    source = function.inputs["buildConfig"]["source"]["storageSource"]
    assert (source["object"], source["generation"]) == (
        archive.inputs["name"],
        object_generation(archive.name),
    )
    grants = {(g.type.rsplit(":", 1)[-1], g.inputs["role"]) for g in grants_of(run, principal)}
    assert grants == {
        ("IAMMember", killswitch.BUILD_PROJECT_ROLE),
        ("RepositoryIamMember", killswitch.BUILD_REPOSITORY_ROLE),
        ("IAMMember", killswitch.BUILD_SOURCE_ROLE),
    }
    repository = run.one("gcp:artifactregistry/repository:Repository")
    (image_grant,) = [g for g in grants_of(run, principal) if g.type.endswith("RepositoryIamMember")]
    assert image_grant.inputs["repository"] == function.inputs["buildConfig"]["dockerRepository"]
    assert image_grant.inputs["repository"].endswith(
        f"/repositories/{repository.inputs['repositoryId']}"
    ) or (
        image_grant.inputs["repository"] == f"{repository.name}-id"  # mocked ids are "<name>-id"
    )
    (source_grant,) = [
        g for g in grants_of(run, principal) if g.inputs["role"] == killswitch.BUILD_SOURCE_ROLE
    ]
    assert (
        f"/buckets/{cfg.bucket_name}/objects/kill-switch/" in source_grant.inputs["condition"]["expression"]
    )


def test_service_identities_exist_before_the_resources_that_need_them(
    cloud_stack: tuple[str, MockedRun],
) -> None:
    _, run = cloud_stack
    agents = {r.inputs["service"]: r for r in run.by_type(SERVICE_IDENTITY)}
    assert set(agents) == {"eventarc.googleapis.com", "pubsub.googleapis.com"}
    # The agent's role carries act-as and token permissions: the bootstrap grants it, never a stack.
    assert not [r for r in run.resources if r.inputs.get("role") == "roles/eventarc.serviceAgent"]
    function = run.one("gcp:cloudfunctionsv2/function:Function")
    assert {a.urn for a in agents.values()} <= set(function.dependencies), "the agents exist first"
    # No fixed wait for the agents' roles: the trigger's creation is retried while they are still refused.
    assert not run.by_type(SLEEP)
    assert "kill-switch-grants" in function.error_hooks


def waits_for(run: MockedRun, resource: Registered) -> set[str]:
    """Every URN `resource` waits for, directly or through what it waits for."""
    by_urn = {r.urn: r for r in run.resources}
    seen: set[str] = set()
    pending = list(resource.dependencies)
    while pending:
        urn = pending.pop()
        if urn not in seen:
            seen.add(urn)
            pending.extend(by_urn[urn].dependencies if urn in by_urn else [])
    return seen


def test_everything_waits_for_the_apis_and_retries_their_first_use(
    cloud_stack: tuple[str, MockedRun],
) -> None:
    """Created after the APIs are enabled, never after a fixed sleep: a call an API enabled moments ago still
    refuses is retried (the error hook; a dynamic provider's own retry wrapper, dynamic/retries.py)."""
    _, run = cloud_stack
    assert not run.by_type(SLEEP)
    services = {s.urn for s in run.by_type("gcp:projects/service:Service")}
    apis = run.one("vertex-training:stack:Apis").urn
    for resource in run.resources:
        if resource.custom and resource.parent != apis and not resource.type.startswith("pulumi:providers"):
            assert services <= waits_for(run, resource), f"{resource.type} {resource.name} may run early"
            assert "api-enablement" in resource.error_hooks, f"{resource.type} {resource.name} is not retried"


def test_no_stack_owns_a_custom_role(cloud_stack: tuple[str, MockedRun]) -> None:
    """Destroy + up and new stack names never hit IAM's 37-day block on a deleted role's id."""
    stack, run = cloud_stack
    assert not run.by_type("gcp:projects/iAMCustomRole:IAMCustomRole")
    role = killswitch.role_name(stack_config(stack).gcp_project)
    assert role in {g.inputs["role"] for g in run.by_type("gcp:projects/iAMMember:IAMMember")}


def ending_at_zero(stack: str) -> str:
    """The commands docs/stack.md gives for `stack` under "Ending at zero"."""
    text = (ROOT / "docs" / "stack.md").read_text()
    section = text.split("## Ending at zero", 1)[1].split("\n## ", 1)[0]
    block = section.split(f"**`{stack}`**", 1)[1]
    return re.split(r"\n\*\*`", block, maxsplit=1)[0]


@pytest.mark.parametrize("stack", ["local", "dev", "prod"])
def test_the_docs_say_how_each_stack_ends_at_zero(stack: str) -> None:
    """What `pulumi destroy` refuses or leaves behind for a stack has a command in its block."""
    run, cfg, commands = cached_run(stack), stack_config(stack), ending_at_zero(stack)
    assert f"pulumi destroy --stack {stack}" in commands and f"pulumi stack rm {stack}" in commands
    if any(r.protect for r in run.resources):
        assert f"pulumi state unprotect --all --stack {stack}" in commands
    if any(r.retain_on_delete and r.type == MODEL_VERSION for r in run.resources):
        assert f"gcloud ai models delete vertex-training-{stack} --region={cfg.region}" in commands
    if not cfg.is_local and not cfg.force_destroy:
        assert 'gcloud storage rm --recursive "gs://$BUCKET/**"' in commands, "a bucket with objects stays"
    if cfg.is_local:
        assert f"rm -rf {Path(cfg.local_dir).relative_to(ROOT)}" in commands
    if cfg.kill_switch and not cfg.is_local:
        assert "gcf-v2-sources" in commands
    # Each recipe proves its zero: the last command of a cloud stack's, and before removing localDir (where
    # the job records it reads live) for a local one.
    lines = [
        line.split("#")[0].strip()
        for line in commands.split("```")[1].splitlines()
        if line.split("#")[0].strip()
    ]
    check = f"make leftovers STACK={stack}"
    assert check in lines
    if cfg.is_local:
        assert lines.index(check) < next(i for i, line in enumerate(lines) if line.startswith("rm -rf"))
    else:
        assert lines[-1] == check
