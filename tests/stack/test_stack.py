"""The stack under Pulumi's mock runtime, for each committed stack file: inventory, IAM, hardening, wiring."""

from __future__ import annotations

import json
import runpy
from collections import Counter

import pytest
from pulumi.runtime import config as runtime_config

from infra.cloudbuild.resource import RESOURCE_TYPE as IMAGE_BUILD
from infra.components import identity, registry, storage
from infra.components.image import SERVING_DIR, SERVING_IMAGE_NAME
from infra.components.killswitch import REQUIRED_APIS as KILL_SWITCH_APIS
from infra.vertex.custom_job.resource import RESOURCE_TYPE
from tests.fakes.pulumi_mocks import MockedRun, Registered, run_program
from tests.stack.conftest import ROOT, cached_run, run_stack, stack_config, stack_values

DYNAMIC = RESOURCE_TYPE
KILL_SWITCH = "vertex-training:guard:KillSwitch"
CLOUD_BUILD_IMAGE = "vertex-training:cloudbuild:CloudBuildImage"
# Every resource type the stack registers, by whether it carries resource labels (and under which input).
LABELED = {
    "gcp:storage/bucket:Bucket": "labels",
    "gcp:artifactregistry/repository:Repository": "labels",
    "gcp:pubsub/topic:Topic": "labels",
    "gcp:vertex/aiTensorboard:AiTensorboard": "labels",
    "gcp:monitoring/notificationChannel:NotificationChannel": "userLabels",
    "gcp:cloudfunctionsv2/function:Function": "labels",
    "docker-build:index:Image": "labels",
    DYNAMIC: "labels",
    "pulumi-python:dynamic/vertex:ModelVersion": "labels",
    "pulumi-python:dynamic/vertex:BatchPredictionJob": "labels",
}
UNLABELABLE = {
    "gcp:projects/service:Service",
    "gcp:serviceaccount/account:Account",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
    "gcp:projects/iAMMember:IAMMember",
    "gcp:serviceaccount/iAMMember:IAMMember",
    "gcp:projects/iAMCustomRole:IAMCustomRole",
    "gcp:pubsub/topicIAMMember:TopicIAMMember",
    "gcp:billing/budget:Budget",
    "gcp:storage/bucketObject:BucketObject",
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
    "gcp:projects/serviceIdentity:ServiceIdentity",
    "time:index/sleep:Sleep",
    # A Cloud Build build has no resource labels (its `tags` find it again instead).
    IMAGE_BUILD,
    "pulumi:providers:gcp",
}


def own(run: MockedRun) -> list[Registered]:
    """Resources this stack declares itself (the kill switch's and the image build's insides are tested by
    their owners: tests/guard, tests/cloudbuild)."""
    outside = {r.urn for r in run.resources if r.type in (KILL_SWITCH, CLOUD_BUILD_IMAGE)}
    inner = [r for r in run.resources if r.parent in outside]
    while inner:
        outside |= {r.urn for r in inner}
        inner = [r for r in run.resources if r.parent in outside and r.urn not in outside]
    return [r for r in run.resources if r.urn not in outside]


def image_resource(run: MockedRun) -> Registered:
    """The resource that pushes the trainer image: a Cloud Build build, or a local Docker build (the serving
    image's, tests/stack/test_serving_image.py, aside)."""
    builds = [r for r in run.by_type(IMAGE_BUILD) if r.inputs["image_name"] != SERVING_IMAGE_NAME]
    docker = [
        r
        for r in run.by_type("docker-build:index:Image")
        if r.inputs["context"]["location"] != str(SERVING_DIR)
    ]
    found = builds + docker
    assert len(found) == 1, f"expected one image resource, found {[r.type for r in found]}"
    return found[0]


def inventory(run: MockedRun) -> Counter:
    return Counter(r.type for r in own(run) if r.custom)


def job(run: MockedRun, name: str) -> Registered:
    found = [r for r in run.by_type(DYNAMIC) if r.name == name]
    assert len(found) == 1, f"expected one CustomJob {name}"
    return found[0]


def test_local_stack_creates_no_cloud_resources() -> None:
    run = cached_run("local")
    # The two jobs, and the batch prediction that classifies the held-back images (batchPrediction).
    assert inventory(run) == Counter({DYNAMIC: 2, "pulumi-python:dynamic/vertex:BatchPredictionJob": 1})
    assert not [r for r in run.resources if r.type.startswith(("gcp:", "docker-build:", "pulumi:providers"))]
    cfg = stack_config("local")
    for name in ("data-prep", "train"):
        inputs = job(run, name).inputs
        assert inputs["runner"] == "local"
        assert inputs["base_output_dir"].startswith(cfg.local_dir + "/")
        assert inputs["worker_pools"][0]["image_uri"].startswith("local:")
    assert run.outputs["data_dir"].startswith(cfg.local_dir)
    assert run.outputs["bucket"] == "" and run.outputs["logs_url"] == ""


@pytest.mark.parametrize(
    ("stack", "extra"),
    [
        ("dev", {}),
        (
            "prod",
            {
                "gcp:vertex/aiTensorboard:AiTensorboard": 1,
                "gcp:monitoring/notificationChannel:NotificationChannel": 1,
                "gcp:projects/iAMMember:IAMMember": 1,  # aiplatform.user for TensorBoard uploads
                "pulumi-python:dynamic/vertex:ModelVersion": 1,  # registerModel: true
            },
        ),
    ],
)
def test_cloud_inventory(stack: str, extra: dict[str, int]) -> None:
    run = cached_run(stack)
    apis = {"aiplatform", "artifactregistry", "billingbudgets", "cloudquotas", "cloudresourcemanager", "iam"}
    apis |= {"logging", "cloudbilling"}
    apis |= {"monitoring", "pubsub", "storage", "cloudbuild"} | {a.split(".")[0] for a in KILL_SWITCH_APIS}
    expected = Counter(
        {
            "gcp:projects/service:Service": len(apis),
            "gcp:storage/bucket:Bucket": 1,
            "gcp:artifactregistry/repository:Repository": 1,
            "gcp:serviceaccount/account:Account": 1,
            "gcp:storage/bucketIAMMember:BucketIAMMember": 2,
            "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": 1,
            # the job's two project roles (Eventarc's agent gets its role from the bootstrap)
            "gcp:projects/iAMMember:IAMMember": 2,
            "gcp:projects/serviceIdentity:ServiceIdentity": 2,  # Eventarc's and Pub/Sub's agents
            "gcp:pubsub/topic:Topic": 1,
            "gcp:pubsub/topicIAMMember:TopicIAMMember": 1,
            "pulumi:providers:gcp": 1,
            "gcp:billing/budget:Budget": 1,
            DYNAMIC: 2,
        }
    )
    expected.update(extra)
    assert inventory(run) == expected
    assert {r.name for r in run.by_type("gcp:projects/service:Service")} == apis
    assert len(run.by_type(KILL_SWITCH)) == 1
    # The trainer's image, and the serving image where something serves (prod registers its model).
    assert len(run.by_type(CLOUD_BUILD_IMAGE)) == (2 if stack == "prod" else 1)


def test_components_parent_their_children(any_stack: tuple[str, MockedRun]) -> None:
    _, run = any_stack
    components = {r.urn for r in run.resources if not r.custom}
    assert components, "the stack is made of components"
    for resource in (r for r in run.resources if r.custom):
        assert resource.parent in components, f"{resource.type} {resource.name} is not inside a component"


def test_apis_stay_enabled_on_destroy(cloud_stack: tuple[str, MockedRun]) -> None:
    _, run = cloud_stack
    for service in run.by_type("gcp:projects/service:Service"):
        assert service.inputs["disableOnDestroy"] is False
        assert service.inputs["disableDependentServices"] is False


def test_iam_is_least_privilege(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    roles = [r.inputs["role"] for r in run.resources if "role" in r.inputs]
    assert not {"roles/owner", "roles/editor", "roles/viewer"} & set(roles)
    assert not [
        r for r in run.resources if "iAMPolicy" in r.type or "iAMBinding" in r.type or "IamPolicy" in r.type
    ]
    assert not [r for r in run.resources if r.type.startswith("gcp:serviceaccount/key")], (
        "no service account keys"
    )

    account = [r for r in own(run) if r.type == "gcp:serviceaccount/account:Account"]
    assert [a.inputs["accountId"] for a in account] == [identity.account_id(stack)]
    member = f"serviceAccount:{identity.account_id(stack)}@{cfg.gcp_project}.iam.gserviceaccount.com"
    grants = [r for r in own(run) if r.inputs.get("member") == member]

    bucket_grants = [g for g in grants if g.type == "gcp:storage/bucketIAMMember:BucketIAMMember"]
    assert sorted((g.inputs["bucket"], g.inputs["role"]) for g in bucket_grants) == sorted(
        (cfg.bucket_name, role) for role in identity.BUCKET_ROLES
    )
    repo_grants = [
        g for g in grants if g.type == "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
    ]
    assert [(g.inputs["repository"], g.inputs["role"]) for g in repo_grants] == [
        (registry.repository_id(stack), identity.REPOSITORY_ROLE)
    ]
    project_roles = {g.inputs["role"] for g in grants if g.type == "gcp:projects/iAMMember:IAMMember"}
    tensorboard = {identity.tensorboard_role(cfg.gcp_project)} if cfg.tensorboard else set()
    expected = set(identity.PROJECT_ROLES) | tensorboard
    assert project_roles == expected
    assert len(grants) == len(bucket_grants) + len(repo_grants) + len(project_roles), "no other grants"


def test_bucket_is_private_regional_and_self_cleaning(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    bucket = run.one("gcp:storage/bucket:Bucket").inputs
    assert bucket["name"] == cfg.bucket_name
    assert bucket["location"] == cfg.region.upper()
    assert bucket["uniformBucketLevelAccess"] is True
    assert bucket["publicAccessPrevention"] == "enforced"
    assert bucket["forceDestroy"] is cfg.force_destroy
    deletes = {
        rule["condition"]["matchesPrefixes"][0]: rule["condition"]["age"]
        for rule in bucket["lifecycleRules"]
        if rule["action"]["type"] == "Delete"
    }
    assert deletes == {
        storage.TMP_PREFIX: storage.TMP_RETENTION_DAYS,
        storage.CHECKPOINT_PREFIX: storage.CHECKPOINT_RETENTION_DAYS,
    }
    # A force-destroyed bucket keeps no soft-deleted objects billing after `pulumi destroy`.
    assert ("softDeletePolicy" in bucket) is cfg.force_destroy
    if cfg.force_destroy:
        assert bucket["softDeletePolicy"]["retentionDurationSeconds"] == 0


def test_registry_has_cleanup_policies(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    repo = run.one("gcp:artifactregistry/repository:Repository").inputs
    assert repo["format"] == "DOCKER" and repo["location"] == stack_config(stack).region
    actions = {p["action"] for p in repo["cleanupPolicies"]}
    assert actions == {"KEEP", "DELETE"} and repo["cleanupPolicyDryRun"] is False


def test_budget_thresholds_and_topic(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    budget = run.one("gcp:billing/budget:Budget").inputs
    topic = run.one("gcp:pubsub/topic:Topic")
    assert budget["billingAccount"] == cfg.budget.billing_account
    assert budget["budgetFilter"]["projects"] == [
        "projects/123456789012"
    ]  # the number: ids cause perma-diffs
    assert budget["amount"]["specifiedAmount"]["units"] == str(int(cfg.budget.amount))
    assert budget["amount"]["specifiedAmount"]["currencyCode"] == cfg.budget.currency
    rules = {(r["spendBasis"], r["thresholdPercent"]) for r in budget["thresholdRules"]}
    assert rules == {("CURRENT_SPEND", t) for t in cfg.budget.thresholds} | {
        ("FORECASTED_SPEND", t) for t in cfg.budget.forecast_thresholds
    }
    assert (
        budget["allUpdatesRule"]["pubsubTopic"] == f"projects/{cfg.gcp_project}/topics/{topic.inputs['name']}"
    )
    channels = run.by_type("gcp:monitoring/notificationChannel:NotificationChannel")
    assert sorted(c.inputs["labels"]["email_address"] for c in channels) == sorted(cfg.budget.emails)
    assert len(budget["allUpdatesRule"].get("monitoringNotificationChannels", [])) == len(cfg.budget.emails)
    publisher = run.one("gcp:pubsub/topicIAMMember:TopicIAMMember").inputs
    assert publisher["role"] == "roles/pubsub.publisher" and publisher["member"].endswith(
        "@system.gserviceaccount.com"
    )
    assert run.outputs["budget_topic"] == budget["allUpdatesRule"]["pubsubTopic"]


def test_every_labelable_resource_is_labelled(any_stack: tuple[str, MockedRun]) -> None:
    stack, run = any_stack
    expected = {"managed-by": "pulumi", "pulumi_project": "vertex-training", "pulumi_stack": stack}
    for resource in (r for r in run.resources if r.custom):
        known = resource.type in LABELED or resource.type in UNLABELABLE
        assert known, f"decide whether {resource.type} is labelable"
        if resource.type in LABELED:
            labels = resource.inputs.get(LABELED[resource.type], {})
            assert expected.items() <= labels.items(), f"{resource.type} {resource.name}: {labels}"


def test_jobs_run_after_data_image_and_iam(cloud_stack: tuple[str, MockedRun]) -> None:
    _, run = cloud_stack
    data, train = job(run, "data-prep"), job(run, "train")
    image = image_resource(run)
    identity_urn = run.one("vertex-training:stack:JobIdentity").urn
    grants = [r.urn for r in run.resources if r.parent == identity_urn and "member" in r.inputs]
    assert len(grants) >= 4
    assert data.urn in train.dependencies
    for needed in (image.urn, *grants):
        assert needed in train.dependencies and needed in data.dependencies
    bucket = run.one("gcp:storage/bucket:Bucket")
    storage_api = next(r for r in run.by_type("gcp:projects/service:Service") if r.name == "storage")
    assert storage_api.urn in bucket.dependencies, "resources wait for their APIs"


def test_jobs_are_wired_to_image_data_and_identity(cloud_stack: tuple[str, MockedRun]) -> None:
    stack, run = cloud_stack
    cfg = stack_config(stack)
    data, train = job(run, "data-prep").inputs, job(run, "train").inputs
    data_pool, chief = data["worker_pools"][0], train["worker_pools"][0]
    data_dir = run.outputs["data_dir"]
    assert data_dir.startswith(f"gs://{cfg.bucket_name}/data/")
    assert data_pool["command"] == ["python", "-m", "trainer.create_tfrecords"]
    assert data_pool["args"][data_pool["args"].index("--output") + 1] == data_dir
    assert data_pool.get("accelerator_count", 0) == 0 and not data_pool.get("accelerator_type")
    assert chief["command"] == ["python", "-m", "trainer.task"]
    assert chief["args"][chief["args"].index("--data-dir") + 1] == data_dir
    checkpoint_dir = chief["args"][chief["args"].index("--checkpoint-dir") + 1]
    assert checkpoint_dir.startswith(f"gs://{cfg.bucket_name}/{storage.CHECKPOINT_PREFIX}")
    assert (
        chief["accelerator_type"] == cfg.accelerator_type
        and chief["accelerator_count"] == cfg.accelerator_count
    )
    # Training runs the exact image by digest; data preparation the tag of its own code.
    assert chief["image_uri"] == run.outputs["image_ref"] and "@sha256:" in chief["image_uri"]
    assert ":data-" in data_pool["image_uri"]
    image = image_resource(run).inputs
    tag = data_pool["image_uri"].rsplit(":", 1)[1]
    assert tag in image["extra_tags"] and data_pool["image_uri"].startswith(chief["image_uri"].split("@")[0])
    for inputs in (data, train):
        assert inputs["runner"] == "vertex" and inputs["region"] == cfg.region
        assert inputs["service_account"] == run.outputs["job_service_account"]
        assert inputs["timeout_seconds"] == cfg.timeout_seconds
    # The training job says Spot with its scheduling strategy (infra/config/capacity.py).
    assert data["spot"] is cfg.spot and train["scheduling_strategy"] == cfg.capacity.scheduling_strategy
    assert len(train["worker_pools"]) == 1 + bool(cfg.worker_count)
    if cfg.worker_count:
        assert train["worker_pools"][1]["replica_count"] == cfg.worker_count
        assert train["restart_on_worker_restart"] is True
    assert ("tensorboard" in train) is cfg.tensorboard


def test_protection_follows_the_stack(any_stack: tuple[str, MockedRun]) -> None:
    stack, run = any_stack
    protected = {r.type for r in run.resources if r.protect}
    if stack == "prod":
        assert protected == {
            "gcp:storage/bucket:Bucket",
            "gcp:vertex/aiTensorboard:AiTensorboard",
        }
        # Replaced by every retraining, so retained (kept in the Registry) rather than protected.
        retained = {r.type for r in run.resources if r.retain_on_delete}
        assert retained == {"pulumi-python:dynamic/vertex:ModelVersion"}
    else:
        assert protected == set()


def _job_inputs(run: MockedRun) -> dict[str, dict]:
    return {r.name: {k: v for k, v in r.inputs.items() if k != "__provider"} for r in run.by_type(DYNAMIC)}


@pytest.mark.parametrize("stack", ["local", "dev"])
def test_job_inputs_are_identical_across_runs(stack: str) -> None:
    """Nothing time- or random-dependent: `pulumi up` with nothing changed submits no job."""
    assert _job_inputs(run_stack(stack)) == _job_inputs(cached_run(stack))


@pytest.mark.parametrize(
    ("change", "replaced"),
    [
        ({"learningRate": 0.01}, {"train"}),
        ({"epochs": 9}, {"train"}),
        ({"imageSize": 96}, {"data-prep", "train"}),
        ({"dataCount": 123}, {"data-prep", "train"}),
    ],
)
def test_a_change_reruns_only_what_depends_on_it(change: dict, replaced: set[str]) -> None:
    before, after = _job_inputs(cached_run("local")), _job_inputs(run_stack("local", **change))
    assert {name for name in before if before[name] != after[name]} == replaced


def test_a_trainer_change_replaces_only_the_training_job(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.components import image

    before = _job_inputs(cached_run("dev"))
    monkeypatch.setattr(image, "content_hash", lambda *_: "0123456789abcdef")
    after = _job_inputs(run_stack("dev"))
    assert {name for name in before if before[name] != after[name]} == {"train"}


def test_main_reads_pulumi_config_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The root __main__.py, as the Pulumi CLI runs it: config values arrive as strings."""
    # Scalars as their text; maps and lists as JSON, as the Pulumi runtime passes structured values.
    strings = {
        k: str(v).lower() if isinstance(v, bool) else json.dumps(v) if isinstance(v, dict | list) else str(v)
        for k, v in stack_values("local").items()
    }
    monkeypatch.setattr(runtime_config, "CONFIG", type(runtime_config.CONFIG)("test_config", default=strings))
    run = run_program(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), stack="local")
    assert _job_inputs(run) == _job_inputs(cached_run("local"))
