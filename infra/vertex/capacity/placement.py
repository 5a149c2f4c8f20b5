"""Machine shapes for one job: the primary and its fallbacks in the order tried (`chain_of`), and its pools on
each. What fallbacks leave (image, args, replicas, identity, output dir: its checkpoints) stays the job's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from infra.vertex.capacity.reservations import CONSUMING_STRATEGIES, Reservation

SHAPE_KEYS = (
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "scheduling_strategy",
    "region",
    "reservation_affinity",
)
# What each worker pool of a CustomJob is, by index (Vertex "Configure distributed training": chief, workers,
# parameter servers or reduction server, evaluators): the local runner's TF_CONFIG task types, log labels.
POOL_ROLES = ("chief", "worker", "ps", "evaluator")
# Where the user can act when no shape could run (the quota page, another region, Dynamic Workload Scheduler).
DWS_DOC = "https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws"


@dataclass(frozen=True)
class Shape:
    """The chief's machine (and every accelerator pool's), and how Vertex provisions it."""

    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    scheduling_strategy: str
    region: str = ""  # "": the job's own (home) region; every shape of `shapes` names its region
    reservation: Reservation | None = None

    def as_dict(self) -> dict[str, Any]:
        """The contract's `placement`: the keys of a fallback (accelerator_type "" for CPU), region included;
        reservation_affinity only when the shape has one."""
        found: dict[str, Any] = {
            "machine_type": self.machine_type,
            "accelerator_type": self.accelerator_type or "",
            "accelerator_count": self.accelerator_count,
            "scheduling_strategy": self.scheduling_strategy,
            "region": self.region,
        }
        if self.reservation is not None:
            found["reservation_affinity"] = self.reservation.as_dict()
        return found

    def where(self) -> str:
        """The shape with its region: `g2-standard-8 + 1 x NVIDIA_L4 (SPOT) in us-east4`."""
        return f"{self} in {self.region}" if self.region else str(self)

    def __str__(self) -> str:
        gpus = f" + {self.accelerator_count} x {self.accelerator_type}" if self.accelerator_type else ""
        return f"{self.machine_type}{gpus} ({self.scheduling_strategy})"


def default_strategy(props: Mapping[str, Any]) -> str:
    """SPOT when `spot` is true, else STANDARD (the contract's default for scheduling_strategy)."""
    return "SPOT" if props.get("spot") else "STANDARD"


MACHINE_KEYS = ("machine_type", "accelerator_type", "accelerator_count")


@dataclass(frozen=True)
class Pool:
    """One pool's machines, as they are billed and held in quota: machine, accelerators, replicas. The rest
    of a worker pool (image, args) is the kind's request's, never read past the boundary."""

    machine_type: str
    accelerator_type: str | None = None  # as given: None when absent (messages print it when set)
    accelerator_count: int = 0
    replica_count: int = 1
    prediction: bool = False  # a prediction machine: priced at Vertex's prediction prices, never training's
    # A prediction machine whose shape may consume a reservation (shaped_pools): billed at Compute Engine's
    # prices plus a fee, not at prediction prices (pricing.RESERVED_WHY).
    reserved: bool = False

    @classmethod
    def of(cls, pool: Mapping[str, Any]) -> Pool:
        """A worker pool of the props (or a pool written as one)."""
        return cls(
            machine_type=str(pool["machine_type"]),
            accelerator_type=pool.get("accelerator_type"),
            accelerator_count=int(pool.get("accelerator_count") or 0),
            replica_count=int(pool.get("replica_count", 1)),
        )

    def machines(self) -> str:
        """`2 x n1-standard-8 + 1 x NVIDIA_TESLA_T4`: how messages name the pool."""
        gpus = f" + {self.accelerator_count} x {self.accelerator_type}" if self.accelerator_count else ""
        return f"{self.replica_count} x {self.machine_type}{gpus}"


def pools(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[Pool]:
    """The machines a job runs on: `machines` (a kind's typed pools: a batch job's prediction machine), else
    its `worker_pools`."""
    return list(machines) if machines is not None else [Pool.of(pool) for pool in props["worker_pools"]]


def takes_shape(index: int, accelerator_count: int) -> bool:
    """A pool a shape applies to: the chief (index 0) and every pool with accelerators; the others (CPU
    workers, parameter servers) keep their machines."""
    return index == 0 or accelerator_count > 0


def shaped_pools(pools: Sequence[Pool], shape: Shape) -> tuple[Pool, ...]:
    """The job's pools on `shape`: the chief and every GPU pool get its machine (takes_shape) and, for a
    prediction machine, its reservation; replica counts stay. What check and each attempt price and submit."""
    consumed = shape.reservation is not None and shape.reservation.consumed
    return tuple(
        replace(
            pool,
            machine_type=shape.machine_type,
            accelerator_type=shape.accelerator_type or None,
            accelerator_count=shape.accelerator_count,
            reserved=pool.prediction and consumed,
        )
        if takes_shape(index, pool.accelerator_count)
        else pool
        for index, pool in enumerate(pools)
    )


def primary_shape(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> Shape:
    strategy = props.get("scheduling_strategy") or default_strategy(props)
    reservation = Reservation.of(props.get("reservation_affinity"))
    return primary_of(pools(props, machines)[0], strategy, str(props.get("region") or ""), reservation)


def primary_of(chief: Pool, strategy: str, home: str, reservation: Reservation | None) -> Shape:
    """The job's own shape: its chief's machine, its strategy, in the home region, with its reservation."""
    return Shape(
        machine_type=chief.machine_type,
        accelerator_type=chief.accelerator_type or None,
        accelerator_count=chief.accelerator_count,
        scheduling_strategy=strategy,
        region=home,
        reservation=reservation,
    )


def resolve(fallback: Mapping[str, Any], primary: Shape) -> Shape:
    """A fallback entry, the keys it leaves out taken from the primary shape (the reservation: `inherits`); a
    stored `placement` without `region` (outputs of earlier versions) ran in the home region."""
    count = int(fallback.get("accelerator_count", primary.accelerator_count))
    # `accelerator_count: 0` without a type is a CPU-only shape: the primary's accelerator is not kept.
    kind = fallback.get("accelerator_type", primary.accelerator_type if count else None)
    shape = Shape(
        machine_type=fallback.get("machine_type", primary.machine_type),
        accelerator_type=kind or None,
        accelerator_count=count,
        scheduling_strategy=fallback.get("scheduling_strategy", primary.scheduling_strategy),
        region=fallback.get("region") or primary.region,
    )
    if "reservation_affinity" in fallback:
        return replace(shape, reservation=Reservation.of(fallback["reservation_affinity"]))
    return replace(shape, reservation=primary.reservation if inherits(shape, primary) else None)


def inherits(shape: Shape, primary: Shape) -> bool:
    """A fallback without a reservation consumes the job's only on its machines (a reservation matches one
    exact machine configuration: Vertex "Use reservations with training") and a CONSUMING_STRATEGIES one."""
    same_machines = (shape.machine_type, shape.accelerator_type, shape.accelerator_count) == (
        primary.machine_type,
        primary.accelerator_type,
        primary.accelerator_count,
    )
    return same_machines and shape.scheduling_strategy in CONSUMING_STRATEGIES


def region_of(job_name: str) -> str | None:
    """The region in a Vertex resource name `projects/P/locations/R/...`; None for other names (local/...)."""
    parts = job_name.split("/")
    return parts[3] if len(parts) > 3 and parts[0] == "projects" and parts[2] == "locations" else None


def shape_from(found: Mapping[str, Any], region: str = "") -> Shape | None:
    """A shape written as a `placement` (runners/submitted.py, the local runner's record); None: none."""
    if not found:
        return None
    return Shape(
        machine_type=found["machine_type"],
        accelerator_type=found["accelerator_type"] or None,
        accelerator_count=int(found["accelerator_count"]),
        scheduling_strategy=found["scheduling_strategy"],
        region=region,
        reservation=Reservation.of(found.get("reservation_affinity")),
    )


def shapes(props: Mapping[str, Any], machines: Sequence[Pool] | None = None) -> list[Shape]:
    """The whole chain of a job's props (chain_of); `machines`: as in `pools`."""
    fallbacks, regions = props.get("fallbacks") or [], props.get("fallback_regions") or []
    return chain_of(primary_shape(props, machines), fallbacks, regions)


def chain_of(primary: Shape, fallbacks: Sequence[Mapping[str, Any]], regions: Sequence[str]) -> list[Shape]:
    """The home chain (the primary, then each fallback resolved on it), then its home-region shapes moved to
    each of `regions` in order, each once; Vertex judges a GPU's regions at submission (gpu_regions.py)."""
    home = primary.region
    chain = [primary, *(resolve(entry, primary) for entry in fallbacks)]
    movable = [
        shape
        for shape, entry in zip(chain, [{}, *fallbacks], strict=True)
        # A shape that names its own region is tried there only; a SPECIFIC_RESERVATION lives in one zone.
        if not entry.get("region")
        and not (shape.reservation and shape.reservation.type == "SPECIFIC_RESERVATION")
    ]
    for region in regions:
        if region == home:
            continue
        for shape in movable:
            moved = replace(shape, region=region)
            if moved not in chain:
                chain.append(moved)
    return chain


def moves_from(home: str | None, shape: Shape) -> bool:
    """The shape runs outside `home`, the home region."""
    return bool(shape.region) and shape.region != home


def on_shape(
    props: Mapping[str, Any], shape: Shape, machines: Sequence[Pool] | None = None
) -> tuple[str, tuple[Pool, ...]]:
    """Where a job of these props runs on `shape` (the shape's region, else the home region) and on which
    machines (shaped_pools): what check, preview and preflight price and count."""
    return shape.region or str(props.get("region") or ""), shaped_pools(pools(props, machines), shape)


# Vertex resources are regional: "For operations other than creating a dataset or importing a model, you must
# use the location of the resources you are operating on" (Vertex AI "Locations",
# https://cloud.google.com/vertex-ai/docs/general/locations, read 2026-11-25), and a TensorBoard instance's
# name carries its location (projects/P/locations/R/tensorboards/T). No page documents a CustomJob in one
# region streaming to a TensorBoard in another, so a moved job runs without the link rather than risk Vertex
# refusing the job; its event files still go to AIP_TENSORBOARD_LOG_DIR under base_output_dir.
TENSORBOARD_DOC = "https://cloud.google.com/vertex-ai/docs/general/locations"


def tensorboard_note(shape: Shape, home: str | None, tensorboard: str | None, output_dir: str) -> str | None:
    """The one line said when a job with a `tensorboard` goes from `home` to another region without it;
    `output_dir`: the job's base output directory, where its event files still go."""
    if not tensorboard or not moves_from(home, shape):
        return None
    logs = output_dir.rstrip("/") + "/logs/"
    return (
        f"in {shape.region}: the job runs without the TensorBoard link (the instance is in "
        f"{home}; a Vertex job uses resources of its own region, {TENSORBOARD_DOC}); its "
        f"event files still go to {logs}"
    )
