"""Budget kill switch: a Cloud Run function on the budget topic that cancels this stack's live jobs."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from infra.components import propagation
from infra.components.options import children
from infra.least_privilege import custom_roles

GUARD_DIR = Path(__file__).parents[1] / "guard"
# Only what the function runs: no __init__.py, no caches. main.py is the runtime's entry module; live_jobs.py
# its listing and cancel of the stack's jobs (shared with `python -m infra.leftovers`), job_kinds.py
# their kinds, deployed_models.py its listing and undeploy of the stack's deployed models (shared too).
SOURCE_FILES = ("main.py", "live_jobs.py", "job_kinds.py", "deployed_models.py", "requirements.txt")
# The runtime installs requirements.txt with pip, one `pip install --requirement` per file (Google's
# buildpacks, pkg/python/python.go PIPInstallRequirements, at 21f28de8, 2026-08-22; uv only from Python 3.14),
# and pip checks every hash once any line has one (pip, "Secure installs"): so the hashed lock (`make lock`)
# is uploaded under that name.
UPLOADED_FROM = {"requirements.txt": "requirements.lock"}


def source_path(name: str, directory: Path = GUARD_DIR) -> Path:
    """The file of `directory` (infra/guard/) uploaded as `name` in the function's source."""
    return directory / UPLOADED_FROM.get(name, name)


ENTRY_POINT = "on_budget_notification"
RUNTIME = "python312"
PUBSUB_EVENT = "google.cloud.pubsub.topic.v1.messagePublished"
# Exactly what infra/guard/live_jobs.py needs (list, get for listed jobs, cancel) and deployed_models.py
# (list endpoints, undeploy); no create, no delete, no deploy.
PERMISSIONS = custom_roles.KILL_SWITCH.permissions
# One custom role per Google Cloud project, shared by every stack (the permissions never differ), created by
# the long-lived bootstrap stack (infra/bootstrap) or once by hand (docs/stack.md), never by a stack: IAM
# soft-deletes a deleted role and keeps its id unusable from day 7 to day 37
# (https://cloud.google.com/iam/docs/creating-custom-roles#deleting-custom-role), so a role that came and
# went with `pulumi destroy` / `up` broke the next `up`, and a per-stack id broke the deploy identity's
# IAM condition for any new stack name.
ROLE_ID = custom_roles.KILL_SWITCH.role_id
# What a function build needs, on exactly its resources (https://cloud.google.com/functions/docs/securing/
# build-custom-sa, https://cloud.google.com/run/docs/configuring/services/build-service-account, read
# 2026-11-22): write build logs, push the image to the stack's repository, and Storage Object Admin
# (roles/storage.objectAdmin) "for retrieving the function source from the Cloud Storage bucket", as the
# build-service-account page lists it (objectViewer is not what Google documents for the build). Cloud
# Functions stores function code in its own bucket `gcf-v2-sources-<project number>-<region>`
# (https://cloud.google.com/functions/docs/building), so the role is one project grant under an IAM condition
# naming exactly that bucket and the stack's `kill-switch/` archive objects: Cloud Storage honours
# resource.name conditions on object roles (https://cloud.google.com/storage/docs/access-control/iam#conditions),
# so the admin role reaches the function's sources only, never the training data beside them, and needs no
# grant on a bucket that exists only after the first deploy. Not the default Cloud Build identity: since 2024
# that is the Compute Engine default account, which gets no roles where
# iam.automaticIamGrantsForDefaultServiceAccounts is enforced (https://cloud.google.com/build/docs/cloud-build-service-account-updates).
BUILD_PROJECT_ROLE = "roles/logging.logWriter"
BUILD_REPOSITORY_ROLE = "roles/artifactregistry.writer"
BUILD_SOURCE_ROLE = "roles/storage.objectAdmin"
# Pub/Sub pushes to the trigger with OIDC tokens minted for the trigger's account; a Pub/Sub service agent
# created on or before 8 April 2021 needs Token Creator for that (https://cloud.google.com/eventarc/standard/docs/
# functions/roles-permissions). Whether the agent is that old cannot be read, so the grant is always made, on
# the trigger's account only (not the project, where it could mint tokens for every account).
TOKEN_CREATOR_ROLE = "roles/iam.serviceAccountTokenCreator"
SOURCE_PREFIX = "kill-switch/"
REQUIRED_APIS: list[str] = [
    "artifactregistry.googleapis.com",  # the function's container image
    "cloudbuild.googleapis.com",  # builds the function from source
    "cloudfunctions.googleapis.com",
    "eventarc.googleapis.com",  # the Pub/Sub trigger
    "iam.googleapis.com",  # its service accounts
    "pubsub.googleapis.com",
    "run.googleapis.com",  # the function runs as a Cloud Run service
]


@dataclass
class KillSwitchArgs:
    project: str
    region: str
    pulumi_project: str
    pulumi_stack: str
    bucket: pulumi.Input[str]  # bucket name: the function source archive goes here
    topic: pulumi.Input[str]  # budget Pub/Sub topic id ("projects/<p>/topics/<t>")
    labels: dict[str, str]
    threshold: float = 1.0
    # The stack's Artifact Registry repository id ("projects/<p>/locations/<region>/repositories/<r>"): the
    # function's image goes with the stack on destroy, not into GCF's own `gcf-artifacts`, which bills on.
    docker_repository: pulumi.Input[str] = ""
    # Every region the stack's jobs may run in (the home region first: CapacityConfig.regions): a job that
    # moved to a fallback region must not escape the budget. Empty: the stack's region only.
    regions: tuple[str, ...] = ()


@dataclass(frozen=True)
class GuardNames:
    """Cloud names unique per (Pulumi project, stack) within one Google Cloud project, stable across runs."""

    function: str
    account_id: str
    build_account_id: str


def guard_names(pulumi_project: str, pulumi_stack: str) -> GuardNames:
    digest = hashlib.sha256(f"{pulumi_project}/{pulumi_stack}".encode()).hexdigest()[:6]
    slug = re.sub(r"[^a-z0-9]+", "-", pulumi_stack.lower()).strip("-")
    # Service account ids allow 6-30 chars [a-z0-9-]; function names 63 chars.
    return GuardNames(
        function=f"vt-killswitch-{slug[:30]}-{digest}".replace("--", "-"),
        account_id=f"vt-guard-{slug[:13]}-{digest}".replace("--", "-"),
        build_account_id=f"vt-build-{slug[:13]}-{digest}".replace("--", "-"),
    )


def role_name(project: str) -> str:
    return f"projects/{project}/roles/{ROLE_ID}"


def gcf_sources_bucket(project_number: str, region: str) -> str:
    return f"gcf-v2-sources-{project_number}-{region}"


def source_condition(
    bucket: str, project_number: str, region: str
) -> gcp.projects.IAMMemberConditionArgsDict:
    """IAM condition: the function's source copies and archive only, not the training data."""
    sources = f"projects/_/buckets/{gcf_sources_bucket(project_number, region)}"
    archive = f"projects/_/buckets/{bucket}/objects/{SOURCE_PREFIX}"
    return {
        "title": "kill switch sources only",
        "expression": (
            f'resource.name == "{sources}" || resource.name.startsWith("{sources}/") '
            f'|| resource.name.startsWith("{archive}")'
        ),
    }


def pubsub_agent_member(project_number: str) -> str:
    """The project's Pub/Sub service agent (https://cloud.google.com/iam/docs/service-agents)."""
    return f"serviceAccount:service-{project_number}@gcp-sa-pubsub.iam.gserviceaccount.com"


def source_digest(directory: Path = GUARD_DIR) -> str:
    """Content hash of the deployed files: a changed source gets a new object, so the function redeploys."""
    h = hashlib.sha256()
    for name in SOURCE_FILES:
        h.update(name.encode() + b"\0" + source_path(name, directory).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def function_environment(args: KillSwitchArgs) -> dict[str, str]:
    """The variables infra/guard/main.py reads (its ENV_* names)."""
    return {
        "KILL_SWITCH_PROJECT": args.project,
        "KILL_SWITCH_REGION": args.region,
        "KILL_SWITCH_REGIONS": ",".join(dict.fromkeys((args.region, *args.regions))),
        "KILL_SWITCH_PULUMI_PROJECT": args.pulumi_project,
        "KILL_SWITCH_PULUMI_STACK": args.pulumi_stack,
        "KILL_SWITCH_THRESHOLD": repr(float(args.threshold)),
    }


class KillSwitch(pulumi.ComponentResource):
    """Function, its least-privilege identity, and the budget topic trigger."""

    function_name: pulumi.Output[str]
    service_account_email: pulumi.Output[str]

    def __init__(self, name: str, args: KillSwitchArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if not (math.isfinite(args.threshold) and args.threshold > 0):
            raise ValueError(
                f"kill switch threshold {args.threshold!r} must be a positive fraction of the budget "
                "(vertex-training:killSwitchThreshold, e.g. 1.0)"
            )
        super().__init__("vertex-training:guard:KillSwitch", name, None, opts)
        child = children(self, opts)
        names = guard_names(args.pulumi_project, args.pulumi_stack)

        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            project=args.project,
            account_id=names.account_id,
            display_name=f"Budget kill switch ({args.pulumi_project}/{args.pulumi_stack})",
            description="Lists and cancels this stack's Vertex AI custom jobs when the budget is spent.",
            # The bootstrap creates a CI-deployed stack's accounts first, to grant act-as on each of them.
            create_ignore_already_exists=True,
            opts=child,
        )
        # No predefined role is this narrow: aiplatform.viewer cannot cancel, aiplatform.user can create.
        grant = gcp.projects.IAMMember(
            f"{name}-can-cancel-jobs",
            project=args.project,
            role=role_name(args.project),
            member=account.member,
            opts=child,
        )
        build = self._build_identity(name, args, names, child)
        project_number = gcp.organizations.get_project_output(project_id=args.project).number
        token_creator = gcp.serviceaccount.IAMMember(
            f"{name}-pubsub-token-creator",
            service_account_id=account.name,
            role=TOKEN_CREATOR_ROLE,
            member=project_number.apply(pubsub_agent_member),
            opts=child,
        )

        archive = gcp.storage.BucketObject(
            f"{name}-source",
            bucket=args.bucket,
            name=f"{SOURCE_PREFIX}source-{source_digest()}.zip",
            source=pulumi.AssetArchive({f: pulumi.FileAsset(str(source_path(f))) for f in SOURCE_FILES}),
            content_type="application/zip",
            opts=child,
        )

        function = gcp.cloudfunctionsv2.Function(
            f"{name}-function",
            project=args.project,
            location=args.region,
            name=names.function,
            description=f"Cancels {args.pulumi_project}/{args.pulumi_stack} jobs when the budget is spent.",
            labels=args.labels,
            build_config=gcp.cloudfunctionsv2.FunctionBuildConfigArgs(
                runtime=RUNTIME,
                entry_point=ENTRY_POINT,
                docker_repository=args.docker_repository,
                service_account=build.email.apply(
                    lambda email: f"projects/{args.project}/serviceAccounts/{email}"
                ),
                source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceArgs(
                    # The generation this `up` uploaded: the job account may write the bucket, so the build
                    # must not take whatever object holds that name when it runs.
                    storage_source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceStorageSourceArgs(
                        bucket=archive.bucket, object=archive.name, generation=archive.generation
                    )
                ),
            ),
            service_config=gcp.cloudfunctionsv2.FunctionServiceConfigArgs(
                service_account_email=account.email,
                environment_variables=function_environment(args),
                available_memory="256M",
                timeout_seconds=120,
                # One instance: notifications are rare and cancelling twice at once gains nothing.
                max_instance_count=1,
                # Pub/Sub push through Eventarc counts as internal traffic; nothing else may call it.
                ingress_settings="ALLOW_INTERNAL_ONLY",
                all_traffic_on_latest_revision=True,
            ),
            event_trigger=gcp.cloudfunctionsv2.FunctionEventTriggerArgs(
                trigger_region=args.region,
                event_type=PUBSUB_EVENT,
                pubsub_topic=args.topic,
                # Malformed messages are acknowledged by the handler; only API failures are redelivered.
                retry_policy="RETRY_POLICY_RETRY",
                service_account_email=account.email,
            ),
            # The identities must hold their permissions before the build and the first event: the
            # function's creation is retried while the new grants (and the Eventarc agent's role) are
            # still refused, up to IAM's documented worst case (components/propagation.py).
            opts=children(
                self,
                opts,
                depends_on=[grant, token_creator, *self.build_grants],
                hooks=propagation.grant_hooks(
                    f"{name}-grants", "the kill switch's new grants and the Eventarc agent's role"
                ),
            ),
        )
        # The trigger's identity invokes only this function's Cloud Run service (same name as the function).
        gcp.cloudrunv2.ServiceIamMember(
            f"{name}-trigger-invoker",
            project=args.project,
            location=args.region,
            name=function.name,
            role="roles/run.invoker",
            member=account.member,
            opts=child,
        )

        self.function_name = function.name
        self.service_account_email = account.email
        self.build_service_account_email = build.email
        self.register_outputs(
            {"function_name": self.function_name, "service_account_email": self.service_account_email}
        )

    def _build_identity(
        self, name: str, args: KillSwitchArgs, names: GuardNames, child: pulumi.ResourceOptions
    ) -> gcp.serviceaccount.Account:
        """The function's own build identity and its three grants (kept in `self.build_grants`)."""
        build = gcp.serviceaccount.Account(
            f"{name}-build-sa",
            project=args.project,
            account_id=names.build_account_id,
            display_name=f"Kill switch build ({args.pulumi_project}/{args.pulumi_stack})",
            description="Builds the kill-switch function: build logs, its image, its source archive only.",
            create_ignore_already_exists=True,
            opts=child,
        )
        self.build_grants: list[pulumi.Resource] = [
            gcp.projects.IAMMember(
                f"{name}-build-logs",
                project=args.project,
                role=BUILD_PROJECT_ROLE,
                member=build.member,
                opts=child,
            ),
            gcp.artifactregistry.RepositoryIamMember(
                f"{name}-build-image",
                repository=args.docker_repository,
                role=BUILD_REPOSITORY_ROLE,
                member=build.member,
                opts=child,
            ),
            gcp.projects.IAMMember(
                f"{name}-build-source",
                project=args.project,
                role=BUILD_SOURCE_ROLE,
                member=build.member,
                condition=pulumi.Output.all(
                    args.bucket, gcp.organizations.get_project_output(project_id=args.project).number
                ).apply(lambda values: source_condition(values[0], values[1], args.region)),
                opts=child,
            ),
        ]
        return build
