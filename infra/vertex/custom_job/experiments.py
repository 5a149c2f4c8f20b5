"""Vertex AI Experiments: one experiment per stack, one experiment run per training job, made as Google's SDK
makes them, so the console's Experiments view compares the stack's runs."""

# As google-cloud-aiplatform makes them (metadata/experiment_resources.py `Experiment.get_or_create`,
# metadata/experiment_run_resource.py `ExperimentRun.create`, jobs.py `CustomJob.submit`; read 2026-11-25):
# the `default` MetadataStore, the experiment and its runs as Contexts (a run a child of its experiment),
# named by the CustomJob's `job_spec.experiment` / `experiment_run`; the SDK sets a run's `_state` when the
# job ends (end_run). Permissions (MetadataService reference, e.g. contexts.create needs
# `aiplatform.contexts.create`): the identity running Pulumi creates them and already holds
# roles/aiplatform.user (infra/bootstrap/roles.py); the job's own identity needs nothing more, since the
# trainer itself writes nothing to the experiment.

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.metadata_service.transports import MetadataServiceGrpcTransport
from google.protobuf import field_mask_pb2

from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.dynamic.preview_inputs import is_unknown
from infra.vertex.lifecycle.errors import JobError, explain, with_retry

METADATA_STORE = "default"
EXPERIMENT_SCHEMA = "system.Experiment"
RUN_SCHEMA = "system.ExperimentRun"
SCHEMA_VERSION = "0.0.1"  # the SDK's metadata constants.SCHEMA_VERSIONS for both schemas
# CreateContext: "Must be 4-128 characters in length. Valid characters are /[a-z][0-9]-/."
CONTEXT_ID = re.compile(r"[a-z0-9][a-z0-9-]{3,127}")
# A run's context id: the SDK keeps room for its TensorBoard run's "-tb-run" suffix
# (google/cloud/aiplatform/metadata/constants.py: _EXPERIMENT_RUN_MAX_LENGTH = 128 - len("-tb-run")).
MAX_RUN_CONTEXT_ID = 128 - len("-tb-run")
RUN_PREFIX = "train-"  # a training job's run: train-<its run directory's hash>
# The SDK's run states (aiplatform_v1.Execution.State names) for a job's terminal state.
RUN_STATES = {"JOB_STATE_SUCCEEDED": "COMPLETE", "JOB_STATE_CANCELLED": "CANCELLED"}


def store_name(project: str, region: str) -> str:
    return f"projects/{project}/locations/{region}/metadataStores/{METADATA_STORE}"


def context_name(project: str, region: str, context_id: str) -> str:
    return f"{store_name(project, region)}/contexts/{context_id}"


def run_context_id(experiment: str, run: str) -> str:
    """The run's context id as the SDK forms it (_format_experiment_run_resource_id)."""
    return f"{experiment}-{run}"


def run_id(run_dir: str) -> str:
    """A training job's run name from its run directory (`runs/<hash>`): the same inputs, the same run."""
    return RUN_PREFIX + run_dir.rstrip("/").rsplit("/", 1)[-1].lower()


@dataclass(frozen=True)
class RunLink:
    """The experiment (and run) a job is linked to, in the region whose metadata store holds them: the
    region of the shape the job runs on."""

    project: str
    region: str
    experiment: str
    run: str | None

    def names(self) -> tuple[str, str]:
        """The experiment and run context resource names ("" without a run)."""
        run = self.run
        return (
            context_name(self.project, self.region, self.experiment),
            context_name(self.project, self.region, run_context_id(self.experiment, run)) if run else "",
        )


def validation_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """experiment / experiment_run: Vertex context ids, the run's within the 128-character limit."""
    experiment, run = props.get("experiment"), props.get("experiment_run")
    if is_unknown(experiment) or is_unknown(run):
        return []  # a preview: checked again with the values
    if experiment is not None and (not isinstance(experiment, str) or not CONTEXT_ID.fullmatch(experiment)):
        reason = f"experiment must be 4-128 lowercase letters, digits or dashes, not {experiment!r}"
        return [("experiment", reason)]  # the run's name is checked against a valid one
    failures = []
    if run is not None and not experiment:
        failures.append(("experiment_run", "experiment_run needs experiment"))
    # A valid experiment and a run of these characters make a valid context id, if it fits the SDK's limit.
    elif run is not None and (
        not isinstance(run, str)
        or not re.fullmatch(r"[a-z0-9-]+", run)
        or len(run_context_id(str(experiment), run)) > MAX_RUN_CONTEXT_ID
    ):
        failures.append(
            (
                "experiment_run",
                f"experiment_run must be lowercase letters, digits or dashes, at most "
                f"{MAX_RUN_CONTEXT_ID - len(str(experiment)) - 1} characters with this experiment, "
                f"not {run!r}",
            )
        )
    if experiment and props.get("tensorboard"):
        # google-cloud-aiplatform's CustomJob.submit refuses both: a run logs to its experiment's TensorBoard.
        failures.append(("experiment", "a job with a tensorboard cannot also name an experiment"))
    return failures


def _client(region: str) -> aiplatform_v1.MetadataServiceClient:
    return aiplatform_v1.MetadataServiceClient(
        **client_kwargs(MetadataServiceGrpcTransport, vertex_endpoint(region))
    )


def _get_or_create(
    client: aiplatform_v1.MetadataServiceClient, parent: str, context_id: str, context: aiplatform_v1.Context
) -> tuple[aiplatform_v1.Context, bool]:
    """The context, made when missing (ALREADY_EXISTS after a race counts as found); True: made now."""
    name = f"{parent}/contexts/{context_id}"
    with contextlib.suppress(gexc.NotFound):
        return client.get_context(name=name), False
    try:
        return client.create_context(parent=parent, context=context, context_id=context_id), True
    except gexc.AlreadyExists:
        return client.get_context(name=name), False


def _ensure_store(client: aiplatform_v1.MetadataServiceClient, project: str, region: str) -> None:
    try:
        client.get_metadata_store(name=store_name(project, region))
    except gexc.NotFound:
        with contextlib.suppress(gexc.AlreadyExists):
            operation: Any = client.create_metadata_store(  # api_core's Operation.result is unannotated
                parent=f"projects/{project}/locations/{region}",
                metadata_store=aiplatform_v1.MetadataStore(),
                metadata_store_id=METADATA_STORE,
            )
            operation.result()


def ensure(link: RunLink, say: Callable[[str], None]) -> None:
    """Get or create the job's experiment (once per stack and region: later jobs find it) and run, and link
    the run, in the region of the shape about to be submitted."""
    project, region, experiment, run = link.project, link.region, link.experiment, link.run
    what = f"Vertex AI Experiments ({experiment})"
    try:
        with_retry(lambda: _ensure(project, region, experiment, run, say), what, 1.0)
    except gexc.GoogleAPICallError as exc:
        raise explain(exc, what, project, region) from None


def _ensure(project: str, region: str, experiment: str, run: str | None, say: Callable[[str], None]) -> None:
    client = _client(region)
    _ensure_store(client, project, region)
    parent = store_name(project, region)
    experiment_context, made = _get_or_create(
        client,
        parent,
        experiment,
        aiplatform_v1.Context(
            display_name=experiment,
            schema_title=EXPERIMENT_SCHEMA,
            schema_version=SCHEMA_VERSION,
            # The SDK's EXPERIMENT_METADATA: the console filters on it.
            metadata={"experiment_deleted": False},
        ),
    )
    if experiment_context.schema_title != EXPERIMENT_SCHEMA:
        raise JobError(
            f"Context {experiment_context.name} exists but is a {experiment_context.schema_title}, not an "
            f"experiment: set the stack key `experiment` to another name."
        )
    if made:
        say(f"created Vertex AI experiment {experiment} (the stack's runs are compared there)")
    if not run:
        return
    run_context, made = _get_or_create(
        client,
        parent,
        run_context_id(experiment, run),
        aiplatform_v1.Context(
            display_name=run,
            schema_title=RUN_SCHEMA,
            schema_version=SCHEMA_VERSION,
            metadata={"_params": {}, "_metrics": {}, "_state": "RUNNING"},
        ),
    )
    if not made and run_context.metadata.get("_state") != "RUNNING":
        # The same run again (a job replaced with the same run directory): it runs now, until it ends.
        _update_metadata(client, run_context, {**dict(run_context.metadata), "_state": "RUNNING"})
    if experiment_context.name not in run_context.parent_contexts:
        # A run made by an interrupted earlier call may still lack its link: looking first keeps it to once.
        client.add_context_children(context=experiment_context.name, child_contexts=[run_context.name])


def _update_metadata(
    client: aiplatform_v1.MetadataServiceClient, context: aiplatform_v1.Context, metadata: dict[str, Any]
) -> None:
    """Send only what changes: the run's metadata, named by the update mask (UpdateContextRequest.update_mask
    in googleapis google/cloud/aiplatform/v1/metadata_service.proto), never the fields read back
    (create_time, update_time, parent_contexts are OUTPUT_ONLY in context.proto). The etag read with it makes
    the write a consistent read-modify-write ("If not set, a blind overwrite update happens")."""
    client.update_context(
        request=aiplatform_v1.UpdateContextRequest(
            context=aiplatform_v1.Context(name=context.name, metadata=metadata, etag=context.etag),
            update_mask=field_mask_pb2.FieldMask(paths=["metadata"]),
        )
    )


def run_params(args: Mapping[str, str]) -> dict[str, float | str]:
    """The chief's arguments as experiment parameters: numbers as numbers (the console sorts them)."""
    params: dict[str, float | str] = {}
    for name, value in args.items():
        if value.startswith(("gs://", "/")):
            continue  # places, not settings
        try:
            params[name] = float(value)
        except ValueError:
            params[name] = value
    return params


def end_run(
    link: RunLink,
    job_state: str,
    job_metrics: Mapping[str, Any],
    params: Mapping[str, float | str],
    warn: Callable[[str], None],
) -> None:
    """Record the run's end state (from the job's), parameters and metrics (metrics.json's numbers) on its
    experiment run; a failure is one warning."""
    _, run_name = link.names()
    if not run_name:
        return
    metrics = {
        k: float(v) for k, v in job_metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
    state = RUN_STATES.get(job_state, "FAILED")
    try:
        client = _client(link.region)
        context = client.get_context(name=run_name)
        metadata = {**dict(context.metadata), "_params": dict(params), "_metrics": metrics, "_state": state}
        _update_metadata(client, context, metadata)
    except Exception as exc:  # the experiment is a view of the run: it never fails it
        warn(f"could not update experiment run {run_name}: {type(exc).__name__}: {exc}")
