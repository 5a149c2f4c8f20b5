"""Typed, validated stack configuration: `vertex-training:<key>` values to StackConfig; errors name keys.

Each concern's keys and rules live in their own module here (data, hyperparameters, budget, capacity); this
module reads the stack-wide keys and composes them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from infra import gcp_ids
from infra.config import (
    batch_prediction,
    budget,
    capacity,
    cost,
    data,
    endpoint,
    experiment,
    hyperparameters,
    model_registry,
    placeholders,
    shapes,
    suggest,
    trainer,
    tuning,
)
from infra.config.batch_prediction import BatchPredictionConfig
from infra.config.budget import BudgetConfig
from infra.config.capacity import CapacityConfig, check_machine
from infra.config.cost import CostConfig
from infra.config.data import DATA_SOURCES, DataConfig
from infra.config.endpoint import EndpointConfig
from infra.config.every_error import load_every_error
from infra.config.hyperparameters import BACKBONES, MIXED_PRECISION, WEIGHTS, Hyperparameters
from infra.config.model_registry import ModelRegistryConfig
from infra.config.reader import (
    NAMESPACE,
    ConfigError,
    ConfigErrors,
    Reader,
    positive,
    problems,
    raise_all,
    set_fix,
    stack_named,
)
from infra.config.trainer import TrainerConfig

__all__ = [
    "BACKBONES",
    "DATA_SOURCES",
    "MIXED_PRECISION",
    "NAMESPACE",
    "WEIGHTS",
    "BatchPredictionConfig",
    "BudgetConfig",
    "ConfigError",
    "ConfigErrors",
    "CostConfig",
    "DataConfig",
    "EndpointConfig",
    "Hyperparameters",
    "ModelRegistryConfig",
    "StackConfig",
    "load_config",
]

REPO_ROOT = Path(__file__).resolve().parents[2]

# Vertex AI caps a CustomJob's scheduling.timeout at 7 days.
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600
RUNNERS = ("vertex", "local")
# cloudbuild: the image is built in Google Cloud (no local Docker); docker: built and pushed from here.
IMAGE_BUILDERS = ("cloudbuild", "docker")
_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]+$")
# Stack names end up in label values, service-account ids and the bucket name.
_STACK = re.compile(r"^[a-z][a-z0-9-]{0,14}$")


@dataclass(frozen=True)
class StackConfig:
    stack: str
    runner: str
    gcp_project: str
    region: str
    local_dir: str
    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    worker_count: int
    data_machine_type: str
    spot: bool
    timeout_seconds: int
    queue_timeout_seconds: int
    data: DataConfig
    hyperparameters: Hyperparameters
    budget: BudgetConfig | None
    force_destroy: bool
    protect: bool
    tensorboard: bool
    kill_switch: bool
    kill_switch_threshold: float
    image_builder: str = "cloudbuild"
    capacity: CapacityConfig = field(default_factory=CapacityConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    model_registry: ModelRegistryConfig = model_registry.NOT_REGISTERED
    tuning: tuning.TuningConfig | None = None
    # The Vertex AI experiment the training jobs are linked to (infra/config/experiment.py); None: not linked.
    experiment: str | None = None
    # Classify images with the trained model after training (infra/config/batch_prediction.py); None: not.
    batch_prediction: BatchPredictionConfig | None = None
    # Serve the registered model online on an endpoint the stack owns (infra/config/endpoint.py); None: not.
    endpoint: EndpointConfig | None = None

    @property
    def is_local(self) -> bool:
        return self.runner == "local"

    @property
    def bucket_name(self) -> str:
        return f"{self.gcp_project}-{self.stack}-training"

    @property
    def output_root(self) -> str:
        """Where the stack's jobs write (runs/, tuning/, data/ under it): localDir, or the stack's bucket."""
        return self.local_dir if self.is_local else f"gs://{self.bucket_name}"


KEYS = (
    "gcpProject",
    "region",
    "runner",
    "localDir",
    "machineType",
    "acceleratorType",
    "acceleratorCount",
    "workerCount",
    "dataMachineType",
    "spot",
    "timeoutSeconds",
    "queueTimeoutSeconds",
    *budget.KEYS,
    *data.KEYS,
    *hyperparameters.KEYS,
    "forceDestroy",
    "protect",
    "tensorboard",
    "killSwitch",
    "killSwitchThreshold",
    "imageBuilder",
    *capacity.KEYS,
    *cost.KEYS,
    *trainer.KEYS,
    *model_registry.KEYS,
    *tuning.KEYS,
    *experiment.KEYS,
    *batch_prediction.KEYS,
    *endpoint.KEYS,
)


# Names people bring from gcloud flags or other tools, which similarity alone would not lead to our keys.
KEY_ALIASES = {
    "gpu": "acceleratorType",
    "gpuType": "acceleratorType",
    "accelerator": "acceleratorType",
    "gpuCount": "acceleratorCount",
    "gpus": "acceleratorCount",
    "zone": "region",
    "location": "region",
    "preemptible": "spot",
    "budget": "budgetAmount",
    "lr": "learningRate",
    "workers": "workerCount",
    # gcloud's --project; similarity alone leads `project` to `protect`.
    "project": "gcpProject",
    "projectId": "gcpProject",
    # A sum of money: by similarity alone `budgetUsd` leads to `budgetEmails`.
    "budgetUsd": "budgetAmount",
    "budgetDollars": "budgetAmount",
    "maxBudget": "budgetAmount",
    "budgetLimit": "budgetAmount",
    "maxCost": "maxCostUsd",
    "costLimit": "maxCostUsd",
}


def _rendered(value: object) -> str | None:
    """A value as `pulumi config set` takes it on the command line, or None for a list, map or long text."""
    scalar = isinstance(value, str | int | float) and not str(value).lstrip().startswith(("[", "{"))
    if not scalar or len(str(value)) >= 80:
        return None
    return shlex.quote(str(value).lower() if isinstance(value, bool) else str(value))


def _as_target(hint: str, value: object) -> object:
    """The value as the suggested key takes it: a zone given for `region` becomes the zone's region."""
    zone = gcp_ids.ZONE.match(value) if hint == "region" and isinstance(value, str) else None
    return zone.group(1) if zone else value


def _study_entry_fix(key: str, entry: str, value: object, stack: str, remove: str) -> str:
    """A study entry (maxTrials, ...) written as a stack key belongs under `tuning`."""
    path = f"'{NAMESPACE}:tuning.{entry}'"
    rendered = _rendered(value)
    if rendered is None:
        return (
            f"{entry} is an entry of the study: move it under {NAMESPACE}:tuning in Pulumi.{stack}.yaml "
            f"(see {tuning.DOCS})"
        )
    return (
        f"{entry} is an entry of the study, {NAMESPACE}:tuning.{entry}: run {remove} and "
        f"`pulumi config set --stack {stack} --path {path} {rendered}`"
    )


def _refusal(
    hint: str, value: object, values: Mapping[str, object], stack: str, root: Path
) -> ConfigError | None:
    """What the suggested key's own checks say of the value (None: it passes), with the other values as
    they are and no unknown key (so this runs no suggestion of its own)."""
    known = {
        name: v
        for name, v in values.items()
        if not (name.startswith(f"{NAMESPACE}:") and name.partition(":")[2] not in KEYS)
    }
    try:
        load_every_error(lambda r: _load(r, stack, root, True), {**known, f"{NAMESPACE}:{hint}": value})
    except ConfigError as error:
        return next((p for p in problems(error) if hint in p.keys), None)
    return None


def _unknown_key_fix(
    key: str, value: object, stack: str, values: Mapping[str, object] | None = None, root: Path = REPO_ROOT
) -> str:
    remove = f"`pulumi config rm --stack {stack} {NAMESPACE}:{key}`"
    hint = suggest.closest(key, KEYS, KEY_ALIASES)
    entry = suggest.spelt_alike(key, tuning.ENTRIES) or (
        None if hint else suggest.closest(key, tuning.ENTRIES)
    )
    if entry is not None:
        return _study_entry_fix(key, entry, value, stack, remove)
    if hint is None:
        return f"remove it with {remove} (docs/stack.md lists the keys)"
    rendered = _rendered(_as_target(hint, value))
    refused = _refusal(hint, _as_target(hint, value), values, stack, root) if values is not None else None
    if refused is not None:
        # The value would fail there too: that key's own problem and fix, not a command that sets it.
        return (
            f"did you mean {NAMESPACE}:{hint}? run {remove}; {value!r} would not do for {hint} either "
            f"({refused.problem}): {refused.fix}"
        )
    if rendered is not None:
        return (
            f"did you mean {NAMESPACE}:{hint}? run {remove} and "
            f"`pulumi config set --stack {stack} {NAMESPACE}:{hint} {rendered}`"
        )
    return f"did you mean {NAMESPACE}:{hint}? rename {key} to {hint} in Pulumi.{stack}.yaml"


def _reject_unknown(values: Mapping[str, object], stack: str, root: Path = REPO_ROOT) -> None:
    """A misspelt key would silently fall back to a default (say, a 7-day timeout): refuse each one."""
    raise_all(
        [
            ConfigError(key, "is not a known key", _unknown_key_fix(key, value, stack, values, root))
            for name, value in values.items()
            for namespace, _, key in [name.partition(":")]
            if namespace == NAMESPACE and key not in KEYS
        ]
    )


def namespace_errors(values: Mapping[str, object], stack: str) -> list[ConfigError]:
    """Keys this program never reads: with no namespace, or one spelt like `vertex-training`. Other
    namespaces (gcp:, pulumi:) belong to other programs and are left alone."""
    found = []
    for name in values:
        namespace, colon, key = name.partition(":")
        if not colon:
            problem, key = f"key {name!r} has no namespace, so nothing reads it", name
        elif namespace != NAMESPACE and suggest.closest(namespace, [NAMESPACE]) == NAMESPACE:
            problem = f"key {name!r} is in namespace {namespace!r}, which nothing reads"
        else:
            continue
        hint = key if key in KEYS else suggest.closest(key, KEYS, KEY_ALIASES)
        fix = (
            f"did you mean {NAMESPACE}:{hint}? rename {name} to {NAMESPACE}:{hint} in Pulumi.{stack}.yaml"
            if hint
            else f"keys of this program are written {NAMESPACE}:<key> (docs/stack.md lists them)"
        )
        found.append(ConfigError(f"(Pulumi.{stack}.yaml)", problem, fix))
    return found


# Each example id the committed stack files ship: its key, the values, what it names, how to find a real one.
_EXAMPLE_IDS = (
    (
        "gcpProject",
        placeholders.PROJECTS,
        "project",
        "<your-project-id>",
        "`gcloud projects list` shows the ids you can use",
    ),
    (
        "billingAccount",
        placeholders.BILLING_ACCOUNTS,
        "billing account",
        "<ACCOUNT_ID>",
        "the ACCOUNT_ID column of `gcloud billing accounts list`",
    ),
)


def example_id_error(values: Mapping[str, object], stack: str) -> ConfigError | None:
    """The committed stack files ship example ids: a stack must not reach Google with them. Both are
    named in one error, so one run names every command to run."""
    read = Reader(values)
    project, account = read.raw("gcpProject"), read.raw("billingAccount")
    example = "is an example from this project's stack files and docs, not your"
    found = [
        (
            key,
            f"{value!r} {example} {noun}",
            f"run `pulumi config set --stack {stack} {NAMESPACE}:{key} {real}` ({hint})",
        )
        for value, (key, examples, noun, real, hint) in zip((project, account), _EXAMPLE_IDS, strict=True)
        if value in examples
    ]
    if not found:
        return None
    keys, problems, fixes = zip(*found, strict=True)
    return ConfigError(keys, "; ".join(problems), " and ".join(fixes))


def load_config(
    values: Mapping[str, object],
    stack: str,
    root: Path = REPO_ROOT,
    *,
    allow_example_ids: bool = False,
) -> StackConfig:
    """Validate a stack's values; raise ConfigError naming the bad key, or ConfigErrors naming each of
    several. `allow_example_ids`: the example project and billing ids pass (a plan that reaches no one)."""
    own = shapes.shape_errors(values, stack)
    try:
        return load_every_error(
            lambda remaining: _load(remaining, stack, root, allow_example_ids),
            values,
            namespace_errors(values, stack) + own,
        )
    except ConfigError as error:
        raise stack_named(_without_repeats(error, own), stack) from None


def _without_repeats(error: ConfigError, own: list[ConfigError]) -> ConfigError:
    """A shape's own problem, reported first, is not repeated by the same shape's later checks (which see
    it through the job's inherited settings)."""
    owned = {k for e in own for k in (e.key, e.key.removesuffix(".machineType"))}
    found = problems(error)
    kept = [p for p in found if p in own or not owned & set(p.keys)]
    return error if len(kept) == len(found) else (kept[0] if len(kept) == 1 else ConfigErrors(kept))


def _load(values: Mapping[str, object], stack: str, root: Path, allow_example_ids: bool) -> StackConfig:
    """One pass over the values: the first problem found is raised."""
    if not _STACK.match(stack):
        raise ConfigError(
            "(stack name)",
            f"{stack!r} must be 1-15 lowercase letters, digits or dashes, starting with a letter "
            "(it goes into labels, service-account ids and the bucket name)",
            "`pulumi stack init <name>` with such a name",
        )
    _reject_unknown(values, stack, root)
    read = Reader(values)
    runner = read.str("runner", "local" if stack == "local" else "vertex", "vertex", RUNNERS)
    cloud = runner == "vertex"

    project = read.str("gcpProject", None, "<your-project-id>")
    if cloud and not project:
        raise ConfigError(
            "gcpProject",
            "is required for a cloud stack",
            set_fix("gcpProject", "<your-project-id>")
            + " (`gcloud projects list` shows the ids you can use)",
        )
    if cloud and not allow_example_ids and (example := example_id_error(values, stack)):
        raise example
    if project and not gcp_ids.PROJECT_ID.match(project):
        raise ConfigError(
            "gcpProject",
            f"{project!r} is not a project id (6-30 lowercase letters, digits, dashes)",
            "use the ID",
        )
    region = read.str("region", "us-central1", "us-central1")
    if not gcp_ids.REGION.match(region):
        raise ConfigError(
            "region",
            f"{region!r} is not a region like us-central1 (zones such as us-central1-a are not)",
            "use a region",
        )

    machine_type = read.str("machineType", "n1-standard-8", "n1-standard-8")
    data_machine_type = read.str("dataMachineType", "n1-standard-4", "n1-standard-4")
    for key, value in (("machineType", machine_type), ("dataMachineType", data_machine_type)):
        if not _MACHINE_TYPE.match(value):
            raise ConfigError(
                key, f"{value!r} is not a machine type like n1-standard-8", set_fix(key, "n1-standard-8")
            )
    accelerator_type: str | None = read.str("acceleratorType", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_T4")
    if accelerator_type in ("", "none", "NONE"):
        accelerator_type = None
    accelerator_count = read.number("acceleratorCount", 1 if accelerator_type else 0, int, "1")
    if accelerator_type and accelerator_count < 1:
        raise ConfigError(
            "acceleratorCount",
            f"must be at least 1 with {accelerator_type}",
            set_fix("acceleratorCount", "1"),
        )
    if not accelerator_type and accelerator_count:
        raise ConfigError(
            "acceleratorCount",
            "is set but acceleratorType is none",
            set_fix("acceleratorType", "NVIDIA_TESLA_T4"),
        )
    check_machine(
        ("machineType", "acceleratorType", "acceleratorCount"),
        machine_type,
        accelerator_type,
        accelerator_count,
    )
    check_machine(("dataMachineType", "dataMachineType", "dataMachineType"), data_machine_type, None, 0)
    worker_count = read.number("workerCount", 0, int, "1")
    if worker_count < 0:
        raise ConfigError(
            "workerCount", f"must be 0 or more, got {worker_count}", set_fix("workerCount", "1")
        )

    timeout = read.number("timeoutSeconds", 7200, int, "7200")
    positive("timeoutSeconds", timeout, "7200", maximum=MAX_TIMEOUT_SECONDS)
    # How long a job may wait for quota or Spot capacity before it is cancelled (it bills nothing meanwhile).
    queue_timeout = read.number("queueTimeoutSeconds", 3600, int, "3600")
    positive("queueTimeoutSeconds", queue_timeout, "3600", maximum=MAX_TIMEOUT_SECONDS)
    threshold = read.number("killSwitchThreshold", 1.0, float, "1.0")
    positive("killSwitchThreshold", threshold, "1.0", maximum=10)

    data_config = data.read_data(read, runner)
    hyperparameter_config = hyperparameters.read_hyperparameters(read)
    local_dir = read.str("localDir", f".local/stack-{stack}", ".local/stack-local")
    local_path = Path(local_dir).expanduser()
    trainer_config = trainer.read_trainer(read, hyperparameter_config, data_config, runner)
    registry = model_registry.read_model_registry(read, stack, runner)
    return StackConfig(
        stack=stack,
        runner=runner,
        gcp_project=project or "local",
        region=region,
        local_dir=str(local_path if local_path.is_absolute() else root / local_path),
        machine_type=machine_type,
        accelerator_type=accelerator_type,
        accelerator_count=accelerator_count,
        worker_count=worker_count,
        data_machine_type=data_machine_type,
        spot=read.bool("spot", False),
        timeout_seconds=timeout,
        queue_timeout_seconds=queue_timeout,
        data=data_config,
        hyperparameters=hyperparameter_config,
        budget=budget.read_budget(read, required=cloud),
        force_destroy=read.bool("forceDestroy", False),
        protect=read.bool("protect", False),
        tensorboard=read.bool("tensorboard", False),
        kill_switch=read.bool("killSwitch", cloud) and cloud,
        kill_switch_threshold=threshold,
        image_builder=read.str("imageBuilder", "cloudbuild", "cloudbuild", IMAGE_BUILDERS),
        capacity=capacity.read_capacity(
            read,
            spot=read.bool("spot", False),
            chief=(machine_type, accelerator_type, accelerator_count),
            worker_count=worker_count,
            timeout_seconds=timeout,
            region=region,
            stack=stack,
        ),
        cost=cost.read_cost(read, stack),
        trainer=trainer_config,
        model_registry=registry,
        tuning=tuning.read_tuning(read, trainer_config),
        experiment=experiment.read_experiment(read, stack, cloud, read.bool("tensorboard", False)),
        batch_prediction=batch_prediction.read_batch_prediction(read, runner, region, timeout, root),
        endpoint=endpoint.read_endpoint(read, registry.register, region),
    )
