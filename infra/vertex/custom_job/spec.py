"""Pure functions over the provider's props: defaults, validation, job key and the Vertex CustomJob."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from google.cloud import aiplatform_v1
from google.protobuf import duration_pb2

from infra.dynamic.preview_inputs import is_unknown, unknown_list
from infra.vertex.capacity import placement, reservations
from infra.vertex.capacity.machines import STRATEGIES
from infra.vertex.capacity.shape_checks import accelerator_failures, fallback_shape
from infra.vertex.cost import limits
from infra.vertex.custom_job import chain, experiments
from infra.vertex.lifecycle import checks, restarts
from infra.vertex.lifecycle.checks import KEY_LABEL
from infra.vertex.lifecycle.props import SHARED_OUTPUTS
from infra.vertex.lifecycle.request import Common

# Inputs that change in place; every other input changes what the job computes, so it replaces the job.
# `fallbacks` and `fallback_regions` only say where else the same job may run, and
# `capacity_deadline_seconds` how long to keep looking, so they change in place too (and stay out of job_key:
# a job adopted after an interrupted `up` is found whatever they say). `reservation_affinity` changes the
# machines the job asks for (MachineSpec, "Immutable."), so it replaces the job, as scheduling_strategy does.
# `experiment` and `experiment_run` only say where the console compares the run (experiments.py): a changed
# link never reruns a job (and stacks from before the link keep their jobs). `max_hourly_usd` and
# `allow_unpriced_shapes` only say which shapes of the chain may run (cost/limits.py). `image_sources` says
# how the image (named by digest in the pools) was made, for run.json: a job never reruns for it.
IN_PLACE_INPUTS = frozenset(
    {
        "image_sources",
        "wait",
        "poll_interval_seconds",
        "queue_timeout_seconds",
        "max_restarts",
        "fallbacks",
        "fallback_regions",
        "capacity_deadline_seconds",
        "max_cost_usd",
        "experiment",
        "experiment_run",
        "max_hourly_usd",
        "allow_unpriced_shapes",
    }
)
INPUTS = (
    "project",
    "region",
    "display_name",
    "worker_pools",
    "service_account",
    "base_output_dir",
    "labels",
    "timeout_seconds",
    "spot",
    "restart_on_worker_restart",
    "tensorboard",
    "wait",
    "poll_interval_seconds",
    "runner",
    "queue_timeout_seconds",
    "max_restarts",
    "scheduling_strategy",
    "max_wait_seconds",
    "fallbacks",
    "max_cost_usd",
    "reservation_affinity",
    "fallback_regions",
    "capacity_deadline_seconds",
    "experiment",
    "experiment_run",
    "max_hourly_usd",
    "allow_unpriced_shapes",
    "image_sources",
)
OUTPUTS = (
    *SHARED_OUTPUTS,
    "model_dir",
    "duration_seconds",
    "estimated_cost_usd",
    "estimated_cost_bound",
    "metrics",
    "cost_cap_reached",
)
DEFAULTS: dict[str, Any] = {
    "labels": {},
    "spot": False,
    "restart_on_worker_restart": False,
    "wait": True,
    "poll_interval_seconds": 30.0,
    "runner": "vertex",
    # How long a job may wait to start (queued for quota or Spot capacity) before it is cancelled.
    "queue_timeout_seconds": 3600,
    "max_restarts": restarts.DEFAULT_MAX_RESTARTS,
}
POOL_DEFAULTS: dict[str, Any] = {
    "args": [],
    "env": {},
    "replica_count": 1,
    "accelerator_count": 0,
    "boot_disk_size_gb": 100,
}
# A fallback entry: a shape, and the hourly ceiling of that shape (cost/limits.py).
FALLBACK_KEYS = (*placement.SHAPE_KEYS, *limits.FALLBACK_LIMIT_KEYS)


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    """Props with the contract's defaults filled in (None values count as absent, as Pulumi drops them)."""
    out = {k: checks.whole_numbers_as_int(v) for k, v in props.items() if v is not None}
    # `spot` and `scheduling_strategy` say the same thing: either one given fills in the other.
    if "scheduling_strategy" not in out:
        spot = out.get("spot")
        out["scheduling_strategy"] = spot if is_unknown(spot) else placement.default_strategy(out)
    elif "spot" not in out and not is_unknown(out["scheduling_strategy"]):
        out["spot"] = out["scheduling_strategy"] == "SPOT"
    out = {**DEFAULTS, **out}
    pools = out.get("worker_pools")
    if isinstance(pools, list):
        out["worker_pools"] = [
            {**POOL_DEFAULTS, **{k: v for k, v in pool.items() if v is not None}}
            if isinstance(pool, Mapping)
            else pool
            for pool in pools
        ]
    return out


def job_key(props: Mapping[str, Any]) -> str:
    """Deterministic label value naming this job's inputs: the same inputs find the same job."""
    return checks.job_key(props, INPUTS, IN_PLACE_INPUTS)


def validate(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every problem with the (defaulted) props as (property, reason); unknown preview values are skipped."""
    failures = checks.common_failures(props, "base_output_dir", ("spot", "restart_on_worker_restart", "wait"))
    failures.extend(checks.whole_number_failures(props, "max_restarts", 0))
    failures.extend(_strategy_failures(props))
    failures.extend(_region_failures(props))
    failures.extend(experiments.validation_failures(props))
    if unknown_list(props, "worker_pools"):
        return failures
    pools = props.get("worker_pools")
    if not isinstance(pools, list) or not pools:
        failures.append(("worker_pools", "worker_pools needs at least one pool: pool 0 is the chief"))
        return failures
    if len(pools) > len(placement.POOL_ROLES):
        failures.append(
            ("worker_pools", "at most 4 worker pools: chief, workers, parameter servers, evaluators")
        )
    pool_failures = [
        failure
        for index, pool in enumerate(pools)
        # A whole pool still unknown during preview is skipped.
        if not (is_unknown(pool) and not isinstance(pool, Mapping))
        for failure in _pool_failures(index, pool, require_command=props.get("runner") == "local")
    ]
    # Shapes are checked on pools that are themselves valid (a fallback reshapes the chief). Where a GPU is
    # offered is not checked: Vertex judges at submission (capacity/gpu_regions.py warns at preview). A chain
    # whose every shape the price limits skip is judged last, on an otherwise valid job.
    failures += pool_failures or _shape_failures(props)
    failures += limits.value_failures(props)
    return failures or limits.failures(props)


def _strategy_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    strategy, spot = props.get("scheduling_strategy"), props.get("spot")
    if is_unknown(strategy):
        return []
    if strategy not in STRATEGIES:
        return [
            (
                "scheduling_strategy",
                f"scheduling_strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}",
            )
        ]
    failures = []
    if isinstance(spot, bool) and spot != (strategy == "SPOT"):
        failures.append(
            (
                "scheduling_strategy",
                f"spot is {str(spot).lower()} but scheduling_strategy is {strategy}: set only one of them "
                "(spot: true is scheduling_strategy SPOT)",
            )
        )
    wait = props.get("max_wait_seconds")
    if wait is not None and not is_unknown(wait):
        failures.extend(chain.max_wait_failures(wait))
    return failures


def _shape_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The chain's shapes read from the props (each fallback entry's form checked here), then the chain's
    rules (chain.py); a preview's unknown strategy, fallbacks or machines wait until they are known."""
    fallbacks = props.get("fallbacks", [])
    if is_unknown(props.get("scheduling_strategy")) or (
        is_unknown(fallbacks) and not isinstance(fallbacks, list)
    ):
        return []
    if not isinstance(fallbacks, list):
        return [("fallbacks", "fallbacks must be a list of shapes (maps)")]
    pools = props["worker_pools"]
    if not all(isinstance(p, Mapping) for p in pools) or any(
        is_unknown(p.get(k)) for p in pools for k in ("machine_type", "accelerator_type", "accelerator_count")
    ):
        return []  # the shapes are checked once the pools are known
    region = props.get("region")
    home = region if isinstance(region, str) and not is_unknown(region) else ""
    reservation, failures = reservations.parse_affinity(
        "reservation_affinity", props.get("reservation_affinity")
    )
    primary = replace(placement.primary_shape(props), region=home, reservation=reservation)
    found = [_fallback_shape(f"fallbacks[{i}]", entry, primary) for i, entry in enumerate(fallbacks)]
    timeout = props.get("timeout_seconds")
    job = chain.Chain(
        primary=primary,
        fallbacks=tuple(shape for _bad, shape in found),
        kept_pools=tuple(
            str(pool["machine_type"]) for pool in pools[1:] if not int(pool.get("accelerator_count") or 0)
        ),
        timeout_seconds=timeout
        if isinstance(timeout, int | float) and not isinstance(timeout, bool)
        else None,
        max_wait_seconds=props.get("max_wait_seconds"),
    )
    return failures + chain.chain_failures(job, [bad for bad, _shape in found])


def _fallback_shape(
    where: str, entry: Any, primary: placement.Shape
) -> tuple[list[tuple[str, str]], placement.Shape | None]:
    """A fallback entry as a shape (placement.resolve), or what is wrong with its form (no shape: that, or a
    preview's unknown values)."""
    if not isinstance(entry, Mapping):
        return (
            [] if is_unknown(entry) else [(where, f"{where} must be a map of {', '.join(FALLBACK_KEYS)}")]
        ), None
    unknown_keys = sorted(set(entry) - set(FALLBACK_KEYS))
    if unknown_keys:
        return [(where, f"{where} has unknown keys {unknown_keys}; use {', '.join(FALLBACK_KEYS)}")], None
    if is_unknown(entry):
        return [], None
    return fallback_shape(where, entry, primary)


def _region_failures(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`fallback_regions` (a list; its rules: chain.py) and `capacity_deadline_seconds`."""
    failures = []
    region = props.get("region")
    extra = props.get("fallback_regions")
    if extra is not None and not is_unknown(extra):
        if not isinstance(extra, list):
            failures.append(("fallback_regions", "fallback_regions must be a list of region ids"))
        else:
            failures.extend(chain.regions_failures(region if isinstance(region, str) else None, extra))
    deadline = props.get("capacity_deadline_seconds")
    if deadline is not None and not is_unknown(deadline):
        failures.extend(chain.deadline_failures(deadline))
    return failures


def _pool_failures(index: int, pool: Any, require_command: bool) -> list[tuple[str, str]]:
    where = f"worker_pools[{index}]"
    if not isinstance(pool, Mapping):
        return [(where, f"{where} must be a map")]
    failures = []

    def known(key: str) -> bool:
        return key in pool and not is_unknown(pool[key])

    replicas = pool.get("replica_count")
    if known("replica_count"):
        if index == 0 and replicas != 1:
            failures.append(
                (
                    f"{where}.replica_count",
                    f"pool 0 is the chief and must have replica_count 1, not {replicas!r}",
                )
            )
        elif isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
            failures.append(
                (f"{where}.replica_count", f"replica_count must be a positive integer, not {replicas!r}")
            )
    for key in ("machine_type", "image_uri"):
        if not is_unknown(pool.get(key)) and (not isinstance(pool.get(key), str) or not pool[key]):
            failures.append((f"{where}.{key}", f"{where}.{key} is required"))
    if known("command") and (
        not isinstance(pool["command"], list) or (require_command and not pool["command"])
    ):
        failures.append(
            (f"{where}.command", "command must be a list of strings (non-empty for the local runner)")
        )
    elif "command" not in pool and require_command:
        failures.append((f"{where}.command", "the local runner needs a command to run"))
    if known("args") and not isinstance(pool["args"], list):
        failures.append((f"{where}.args", "args must be a list of strings"))
    if known("env") and not isinstance(pool["env"], Mapping):
        failures.append((f"{where}.env", "env must be a map of strings"))
    disk_type = pool.get("boot_disk_type")
    if known("boot_disk_type") and (not isinstance(disk_type, str) or not disk_type):
        failures.append((f"{where}.boot_disk_type", "boot_disk_type must be a disk type name, e.g. pd-ssd"))
    if known("boot_disk_size_gb"):
        disk = pool["boot_disk_size_gb"]
        if isinstance(disk, bool) or not isinstance(disk, int) or disk < 100:
            failures.append(
                (f"{where}.boot_disk_size_gb", f"boot_disk_size_gb must be an integer >= 100, not {disk!r}")
            )
    failures.extend(accelerator_failures(where, pool))
    return failures


def build_job(training: Training, key: str) -> aiplatform_v1.CustomJob:
    """The CustomJob of a request on its shape (the lifecycle's Placed.body), labelled with the job's key."""
    common = training.common
    labels = {**common.labels, KEY_LABEL: key}
    return aiplatform_v1.CustomJob(
        display_name=common.display_name, job_spec=custom_job_spec(training), labels=labels
    )


def custom_job_spec(training: Training) -> aiplatform_v1.CustomJobSpec:
    """Vertex's CustomJobSpec of a request on its shape (a study's trials carry it too)."""
    common = training.common
    scheduling = aiplatform_v1.Scheduling(
        timeout=duration_pb2.Duration(seconds=int(common.timeout_seconds)),
        restart_job_on_worker_restart=training.restart_on_worker_restart,
        strategy=aiplatform_v1.Scheduling.Strategy[training.scheduling_strategy],  # type: ignore[misc]
    )
    if training.scheduling_strategy == "FLEX_START" and common.max_wait_seconds is not None:
        scheduling.max_wait_duration = duration_pb2.Duration(seconds=common.max_wait_seconds)
    experiment, run = link.names() if (link := training.link) is not None else ("", "")
    return aiplatform_v1.CustomJobSpec(
        worker_pool_specs=[_pool_spec(pool) for pool in training.worker_pools],
        scheduling=scheduling,
        service_account=common.service_account,
        base_output_directory=aiplatform_v1.GcsDestination(output_uri_prefix=common.output_dir),
        tensorboard=common.tensorboard,
        experiment=experiment,
        experiment_run=run,
    )


def _pool_spec(pool: WorkerPool) -> aiplatform_v1.WorkerPoolSpec:
    machines = pool.machines
    machine = aiplatform_v1.MachineSpec(machine_type=machines.machine_type)
    if machines.accelerator_type:
        machine.accelerator_type = aiplatform_v1.AcceleratorType[machines.accelerator_type]  # type: ignore[misc]
        machine.accelerator_count = machines.accelerator_count
    if pool.reservation is not None:  # the shape's, on the pools that take its machines (WorkerPool.on)
        machine.reservation_affinity = pool.reservation.proto()
    return aiplatform_v1.WorkerPoolSpec(
        machine_spec=machine,
        replica_count=machines.replica_count,
        # Unset unless configured: Vertex then picks the machine type's default disk (not pd-ssd everywhere).
        disk_spec=aiplatform_v1.DiskSpec(
            boot_disk_type=pool.boot_disk_type, boot_disk_size_gb=pool.boot_disk_size_gb
        ),
        container_spec=aiplatform_v1.ContainerSpec(
            image_uri=pool.image_uri,
            command=list(pool.command),
            args=list(pool.args),
            env=[aiplatform_v1.EnvVar(name=k, value=v) for k, v in pool.env],
        ),
    )


@dataclass(frozen=True)
class WorkerPool:
    """One worker pool of the request: its machines (what prices and quotas read) and its container."""

    machines: placement.Pool
    image_uri: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # sorted by name, values as strings
    boot_disk_type: str
    boot_disk_size_gb: int
    reservation: reservations.Reservation | None

    @classmethod
    def of(cls, pool: Mapping[str, Any]) -> WorkerPool:
        return cls(
            machines=placement.Pool.of(pool),
            image_uri=str(pool.get("image_uri") or ""),
            command=tuple(pool.get("command") or ()),
            args=tuple(str(arg) for arg in pool.get("args") or ()),
            env=tuple(sorted((str(k), str(v)) for k, v in (pool.get("env") or {}).items())),
            boot_disk_type=str(pool.get("boot_disk_type") or ""),
            boot_disk_size_gb=int(pool.get("boot_disk_size_gb", 100)),
            reservation=reservations.Reservation.of(pool.get("reservation_affinity")),
        )


@dataclass(frozen=True)
class Training:
    """A CustomJob's whole request (JobRequest.body), typed: its worker pools, scheduling and experiment link
    beside the common part; `on(shape)` puts it on one shape of its chain."""

    common: Common
    worker_pools: tuple[WorkerPool, ...]
    scheduling_strategy: str
    restart_on_worker_restart: bool
    on_vertex: bool
    experiment: str | None  # Vertex AI Experiments: where the console compares the stack's runs
    experiment_run: str | None

    @property
    def pools(self) -> tuple[placement.Pool, ...]:
        return tuple(pool.machines for pool in self.worker_pools)

    @property
    def chief_args(self) -> tuple[str, ...]:
        """The chief's arguments: the experiment run's parameters."""
        return self.worker_pools[0].args if self.worker_pools else ()

    @property
    def link(self) -> experiments.RunLink | None:
        """The experiment run a job on Vertex is linked to, in the region it runs in; None: not linked."""
        if not self.on_vertex or not self.experiment:
            return None
        common = self.common
        return experiments.RunLink(common.project, common.region, self.experiment, self.experiment_run)

    def on(self, shape: placement.Shape) -> Training:
        """The request on `shape`: the chief and every pool with accelerators get its machine and its
        reservation (placement.shaped_pools), the rest stays."""
        shaped = placement.shaped_pools(self.pools, shape)
        pools = tuple(
            replace(pool, machines=machines, reservation=shape.reservation)
            if placement.takes_shape(index, pool.machines.accelerator_count)
            else pool
            for index, (pool, machines) in enumerate(zip(self.worker_pools, shaped, strict=True))
        )
        return replace(
            self,
            common=self.common.on(shape),
            worker_pools=pools,
            scheduling_strategy=shape.scheduling_strategy,
        )


def body(props: Mapping[str, Any]) -> Training:
    """The kind's whole request from the (defaulted) props, parsed once by JobRequest.parse."""
    return Training(
        common=Common.of(props, "base_output_dir"),
        worker_pools=tuple(WorkerPool.of(pool) for pool in props.get("worker_pools") or ()),
        scheduling_strategy=str(props.get("scheduling_strategy") or placement.default_strategy(props)),
        restart_on_worker_restart=bool(props.get("restart_on_worker_restart", False)),
        on_vertex=props.get("runner") == "vertex",
        experiment=props.get("experiment") or None,
        experiment_run=props.get("experiment_run") or None,
    )
