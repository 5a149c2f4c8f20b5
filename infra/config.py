"""Typed, validated stack configuration: `vertex-training:<key>` values to StackConfig; errors name keys."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import gcp_ids

NAMESPACE = "vertex-training"
REPO_ROOT = Path(__file__).resolve().parents[1]

# Vertex AI caps a CustomJob's scheduling.timeout at 7 days.
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600
RUNNERS = ("vertex", "local")
DATA_SOURCES = ("synthetic", "folder", "tfds")
WEIGHTS = ("imagenet", "none")
MIXED_PRECISION = ("auto", "on", "off")
# cloudbuild: the image is built in Google Cloud (no local Docker); docker: built and pushed from here.
IMAGE_BUILDERS = ("cloudbuild", "docker")
# The trainer's --backbone choices (trainer/backbones.py; the two packages never import each other).
BACKBONES = ("densenet121", "resnet50", "efficientnetv2b0")
# A TFDS name: `name`, optionally `/config` and `:version` (tfds.core.naming).
_TFDS_NAME = re.compile(r"^[a-z][a-z0-9_]*(/[a-zA-Z0-9_.-]+)?(:[0-9.*]+)?$")

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]+$")
# Stack names end up in label values, service-account ids and the bucket name.
_STACK = re.compile(r"^[a-z][a-z0-9-]{0,14}$")
# A budget can notify at most five monitoring channels.
MAX_BUDGET_EMAILS = 5


class ConfigError(ValueError):
    """A stack configuration value is missing or invalid; the message names the key and the fix."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        self.key = key
        name = key if key.startswith("(") else f"{NAMESPACE}:{key}"
        super().__init__(f"{name}: {problem}. Fix: {fix}")


@dataclass(frozen=True)
class DataConfig:
    """What the data-preparation job produces; any change here reruns both jobs."""

    source: str
    count: int | None
    image_size: int
    folder: str | None
    seed: int
    tfds_name: str | None = None


@dataclass(frozen=True)
class Hyperparameters:
    """Training arguments; a change here replaces only the training job."""

    epochs: int
    fine_tune_epochs: int
    batch_size: int
    learning_rate: float
    weights: str
    mixed_precision: str
    backbone: str = BACKBONES[0]
    num_classes: int | None = None  # checked against the data's class count before training starts


@dataclass(frozen=True)
class BudgetConfig:
    billing_account: str
    amount: float
    currency: str
    thresholds: tuple[float, ...]
    forecast_thresholds: tuple[float, ...]
    emails: tuple[str, ...]


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

    @property
    def is_local(self) -> bool:
        return self.runner == "local"

    @property
    def bucket_name(self) -> str:
        return f"{self.gcp_project}-{self.stack}-training"


def _set_fix(key: str, example: str) -> str:
    return f"run `pulumi config set {NAMESPACE}:{key} {example}`"


class _Reader:
    """Reads one namespace's values, which arrive typed (YAML) or as strings (the Pulumi runtime)."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self.values = values

    def raw(self, key: str) -> Any:
        value = self.values.get(f"{NAMESPACE}:{key}")
        return None if value == "" else value

    def str(self, key: str, default: str | None, example: str, choices: tuple[str, ...] = ()) -> str | None:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}", _set_fix(key, example))
        if choices and value not in choices:
            raise ConfigError(key, f"{value!r} is not one of {', '.join(choices)}", _set_fix(key, choices[0]))
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(key, f"expected true or false, got {value!r}", _set_fix(key, "true"))

    def number(self, key: str, default: Any, kind: Callable[[Any], Any], example: str) -> Any:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            raise ConfigError(key, f"expected a number, got {value!r}", _set_fix(key, example))
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise ConfigError(key, f"expected a number, got {value!r}", _set_fix(key, example)) from None
        if kind is int and isinstance(value, float) and value != number:
            raise ConfigError(key, f"expected a whole number, got {value!r}", _set_fix(key, example))
        return number

    def list(self, key: str, default: tuple, example: str) -> tuple:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = None
        if not isinstance(value, list):
            fix = f"run `pulumi config set --path '{NAMESPACE}:{key}[0]' {example}` or write a YAML list"
            raise ConfigError(key, f"expected a list, got {self.raw(key)!r}", fix)
        return tuple(value)


def _positive(key: str, value: float, example: str, maximum: float | None = None) -> None:
    if value <= 0:
        raise ConfigError(key, f"must be greater than 0, got {value}", _set_fix(key, example))
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be at most {maximum}, got {value}", _set_fix(key, example))


def _thresholds(read: _Reader, key: str, default: tuple[float, ...]) -> tuple[float, ...]:
    values = read.list(key, default, "0.9")
    fix = f"use fractions of the budget, e.g. [0.5, 0.9, 1.0] (1.0 = 100%) in Pulumi.<stack>.yaml under {key}"
    result = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 10:
            raise ConfigError(key, f"{value!r} is not a fraction between 0 and 10", fix)
        result.append(float(value))
    if len(set(result)) != len(result):
        raise ConfigError(key, f"duplicate thresholds in {list(values)}", fix)
    return tuple(sorted(result))


def _machine(keys: tuple[str, str, str], machine: str, accelerator: str | None, count: int) -> None:
    """Family/accelerator compatibility via the CustomJob resource's own validator (the rules live once)."""
    from infra.vertex.spec import validate

    pool = {"machine_type": machine, "accelerator_type": accelerator, "accelerator_count": count}
    probe = {
        "runner": "local",
        "display_name": "config-check",
        "base_output_dir": "config-check",
        "timeout_seconds": 1,
        "worker_pools": [{**pool, "image_uri": "config-check", "command": ["true"]}],
    }
    fields = dict(zip(("machine_type", "accelerator_type", "accelerator_count"), keys, strict=True))
    for prop, reason in validate({k: v for k, v in probe.items() if v is not None}):
        field = prop.rsplit(".", 1)[-1]
        if field in fields:
            raise ConfigError(
                fields[field], reason, "pick a matching machine type and accelerator (docs/stack.md)"
            )


def _budget(read: _Reader, required: bool) -> BudgetConfig | None:
    account = read.str("billingAccount", None, "012345-6789AB-CDEF01")
    if account is None:
        if required:
            raise ConfigError(
                "billingAccount",
                "is required for a cloud stack (the budget is created on it)",
                _set_fix("billingAccount", "012345-6789AB-CDEF01")
                + " (find it with `gcloud billing accounts list`)",
            )
        return None
    if not gcp_ids.BILLING_ACCOUNT.match(account):
        raise ConfigError(
            "billingAccount",
            f"{account!r} is not a billing account id like 012345-6789AB-CDEF01",
            "copy the ACCOUNT_ID column of `gcloud billing accounts list`",
        )
    amount = read.number("budgetAmount", 20.0, float, "50")
    _positive("budgetAmount", amount, "50")
    currency = read.str("budgetCurrency", "USD", "USD")
    if not _CURRENCY.match(currency):
        raise ConfigError(
            "budgetCurrency",
            f"{currency!r} is not an ISO 4217 code",
            _set_fix("budgetCurrency", "USD") + " (it must be the billing account's currency)",
        )
    emails = read.list("budgetEmails", (), "you@example.com")
    for email in emails:
        if not isinstance(email, str) or not _EMAIL.match(email):
            raise ConfigError("budgetEmails", f"{email!r} is not an e-mail address", "list addresses only")
    if len(emails) > MAX_BUDGET_EMAILS:
        raise ConfigError(
            "budgetEmails",
            f"a budget notifies at most {MAX_BUDGET_EMAILS} channels, got {len(emails)}",
            "use a group address",
        )
    return BudgetConfig(
        billing_account=account,
        amount=amount,
        currency=currency,
        thresholds=_thresholds(read, "budgetThresholds", (0.5, 0.9, 1.0)),
        forecast_thresholds=_thresholds(read, "budgetForecastThresholds", (1.0,)),
        emails=tuple(emails),
    )


def _data(read: _Reader, runner: str) -> DataConfig:
    source = read.str("dataSource", "synthetic", "synthetic", DATA_SOURCES)
    folder = read.str("dataFolder", None, "gs://my-bucket/images")
    if source == "folder" and not folder:
        raise ConfigError(
            "dataFolder",
            "is required when dataSource is folder",
            _set_fix("dataFolder", "gs://my-bucket/images") + " (one sub-folder per class)",
        )
    if source != "folder" and folder:
        raise ConfigError("dataFolder", f"is only used with dataSource folder, not {source}", "remove it")
    if source == "folder" and runner == "vertex" and not folder.startswith("gs://"):
        raise ConfigError(
            "dataFolder",
            f"{folder!r} is not readable by a cloud job",
            _set_fix("dataFolder", "gs://my-bucket/images")
            + " (upload the folder with `gcloud storage cp -r`)",
        )
    count = read.number("dataCount", 400 if source == "synthetic" else None, int, "400")
    if count is not None:
        _positive("dataCount", count, "400")
    image_size = read.number("imageSize", 224, int, "224")
    if not 32 <= image_size <= 512:
        raise ConfigError(
            "imageSize", f"must be between 32 and 512 pixels, got {image_size}", _set_fix("imageSize", "224")
        )
    seed = read.number("dataSeed", 0, int, "0")
    tfds_name = read.str("tfdsName", None, "cassava")
    if tfds_name and source != "tfds":
        raise ConfigError("tfdsName", f"is only used with dataSource tfds, not {source}", "remove it")
    if tfds_name and not _TFDS_NAME.match(tfds_name):
        raise ConfigError(
            "tfdsName",
            f"{tfds_name!r} is not a TensorFlow Datasets name like cassava or tf_flowers",
            _set_fix("tfdsName", "cassava") + " (https://www.tensorflow.org/datasets/catalog/overview)",
        )
    return DataConfig(
        source=source, count=count, image_size=image_size, folder=folder, seed=seed, tfds_name=tfds_name
    )


def _hyperparameters(read: _Reader) -> Hyperparameters:
    epochs = read.number("epochs", 5, int, "5")
    _positive("epochs", epochs, "5")
    fine_tune = read.number("fineTuneEpochs", 2, int, "2")
    if fine_tune < 0:
        raise ConfigError(
            "fineTuneEpochs", f"must be 0 or more, got {fine_tune}", _set_fix("fineTuneEpochs", "2")
        )
    batch_size = read.number("batchSize", 32, int, "32")
    _positive("batchSize", batch_size, "32", maximum=4096)
    learning_rate = read.number("learningRate", 1e-3, float, "0.001")
    _positive("learningRate", learning_rate, "0.001", maximum=1.0)
    return Hyperparameters(
        epochs=epochs,
        fine_tune_epochs=fine_tune,
        batch_size=batch_size,
        learning_rate=learning_rate,
        weights=read.str("weights", "imagenet", "imagenet", WEIGHTS),
        mixed_precision=read.str("mixedPrecision", "auto", "auto", MIXED_PRECISION),
        backbone=read.str("backbone", BACKBONES[0], BACKBONES[0], BACKBONES),
        num_classes=_num_classes(read),
    )


def _num_classes(read: _Reader) -> int | None:
    value = read.number("numClasses", None, int, "5")
    if value is not None and value < 2:
        raise ConfigError(
            "numClasses", f"must be at least 2, got {value}", _set_fix("numClasses", "5") + " or remove it"
        )
    return value


KEYS = (
    "gcpProject",
    "region",
    "runner",
    "localDir",
    "billingAccount",
    "budgetAmount",
    "budgetCurrency",
    "budgetThresholds",
    "budgetForecastThresholds",
    "budgetEmails",
    "machineType",
    "acceleratorType",
    "acceleratorCount",
    "workerCount",
    "dataMachineType",
    "spot",
    "timeoutSeconds",
    "queueTimeoutSeconds",
    "dataSource",
    "dataFolder",
    "dataCount",
    "imageSize",
    "dataSeed",
    "tfdsName",
    "epochs",
    "fineTuneEpochs",
    "batchSize",
    "learningRate",
    "weights",
    "mixedPrecision",
    "backbone",
    "numClasses",
    "forceDestroy",
    "protect",
    "tensorboard",
    "killSwitch",
    "killSwitchThreshold",
    "imageBuilder",
)


def _reject_unknown(values: Mapping[str, object]) -> None:
    """A misspelt key would silently fall back to a default (say, a 7-day timeout): refuse it."""
    lowered = {key.lower(): key for key in KEYS}
    for name in values:
        namespace, _, key = name.partition(":")
        if namespace == NAMESPACE and key not in KEYS:
            hint = lowered.get(key.lower())
            fix = (
                f"did you mean {NAMESPACE}:{hint}?" if hint else f"remove it (known keys: {', '.join(KEYS)})"
            )
            raise ConfigError(key, "is not a known key", fix)


def load_config(values: Mapping[str, object], stack: str, root: Path = REPO_ROOT) -> StackConfig:
    """Validate a stack's `vertex-training:*` values; raise ConfigError naming the first bad key."""
    if not _STACK.match(stack):
        raise ConfigError(
            "(stack name)",
            f"{stack!r} must be 1-15 lowercase letters, digits or dashes, starting with a letter "
            "(it goes into labels, service-account ids and the bucket name)",
            "`pulumi stack init <name>` with such a name",
        )
    _reject_unknown(values)
    read = _Reader(values)
    runner = read.str("runner", "local" if stack == "local" else "vertex", "vertex", RUNNERS)
    cloud = runner == "vertex"

    project = read.str("gcpProject", None, "my-project")
    if cloud and not project:
        raise ConfigError(
            "gcpProject",
            "is required for a cloud stack",
            _set_fix("gcpProject", "$(gcloud config get project)"),
        )
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
                key, f"{value!r} is not a machine type like n1-standard-8", _set_fix(key, "n1-standard-8")
            )
    accelerator_type = read.str("acceleratorType", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_T4")
    if accelerator_type in ("", "none", "NONE"):
        accelerator_type = None
    accelerator_count = read.number("acceleratorCount", 1 if accelerator_type else 0, int, "1")
    if accelerator_type and accelerator_count < 1:
        raise ConfigError(
            "acceleratorCount",
            f"must be at least 1 with {accelerator_type}",
            _set_fix("acceleratorCount", "1"),
        )
    if not accelerator_type and accelerator_count:
        raise ConfigError(
            "acceleratorCount",
            "is set but acceleratorType is none",
            _set_fix("acceleratorType", "NVIDIA_TESLA_T4"),
        )
    _machine(
        ("machineType", "acceleratorType", "acceleratorCount"),
        machine_type,
        accelerator_type,
        accelerator_count,
    )
    _machine(("dataMachineType", "dataMachineType", "dataMachineType"), data_machine_type, None, 0)
    worker_count = read.number("workerCount", 0, int, "1")
    if worker_count < 0:
        raise ConfigError(
            "workerCount", f"must be 0 or more, got {worker_count}", _set_fix("workerCount", "1")
        )

    timeout = read.number("timeoutSeconds", 7200, int, "7200")
    _positive("timeoutSeconds", timeout, "7200", maximum=MAX_TIMEOUT_SECONDS)
    # How long a job may wait for quota or Spot capacity before it is cancelled (it bills nothing meanwhile).
    queue_timeout = read.number("queueTimeoutSeconds", 3600, int, "3600")
    _positive("queueTimeoutSeconds", queue_timeout, "3600", maximum=MAX_TIMEOUT_SECONDS)
    threshold = read.number("killSwitchThreshold", 1.0, float, "1.0")
    _positive("killSwitchThreshold", threshold, "1.0", maximum=10)

    local_dir = read.str("localDir", f".local/stack-{stack}", ".local/stack-local")
    local_path = Path(local_dir).expanduser()
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
        data=_data(read, runner),
        hyperparameters=_hyperparameters(read),
        budget=_budget(read, required=cloud),
        force_destroy=read.bool("forceDestroy", False),
        protect=read.bool("protect", False),
        tensorboard=read.bool("tensorboard", False),
        kill_switch=read.bool("killSwitch", cloud) and cloud,
        kill_switch_threshold=threshold,
        image_builder=read.str("imageBuilder", "cloudbuild", "cloudbuild", IMAGE_BUILDERS),
    )
