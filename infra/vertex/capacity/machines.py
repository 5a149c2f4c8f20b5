"""Machine facts, once: scheduling strategies, machine families, and every training GPU with what it needs.

Adding a GPU is one `Gpu(...)` row. Sources, per column:
- families: Vertex AI custom training, "Configure compute resources" machine types
  (https://cloud.google.com/vertex-ai/docs/training/configure-compute);
- flex_start: https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws (read 2026-11-22): L4, A100,
  H100, H200 or B200;
- quota_name: `get_quota_id` in GoogleCloudPlatform/vertex-ai-samples (community-content/vertex_model_garden/
  model_oss/notebook_util/common_util.py, read 2026-11-22); it maps NVIDIA_GB200 to the B200 quota, and so do
  we. P4 and RTX PRO 6000 have no documented training quota id: not checked (quotas.py says so);
- price_words: Billing Catalog SKU descriptions ("Nvidia L4 GPU running in Iowa"; SkyPilot's fetch_gcp.py and
  dstack's gpuhunt match the same words);
- n1_limits and GPUS_ATTACHED (how many GPUs a machine type takes), read 2026-11-26.
  Compute Engine's "GPU machine types" (https://cloud.google.com/compute/docs/gpus), in the search tool's
  excerpts only: "Each G2 machine type has a fixed number of NVIDIA L4 GPUs" (g2-standard-4 and -8: 1 GPU;
  an older copy: a3-highgpu-8g "8 GPUs").
  Its N1 tables were not shown, nor was Vertex AI's "Configure compute resources for custom training"
  (https://cloud.google.com/vertex-ai/docs/training/configure-compute): the rest is read from code that
  transcribes them. GPUS_ATTACHED: `accelerator_machines` in GoogleCloudPlatform/cluster-toolkit
  modules/internal/gpu-definition/main.tf @147e356daa102ed18352faf7ef9f1075fa01e379 (every row below, g4
  and a4x too); SkyPilot's `_ACC_INSTANCE_TYPE_DICTS` (skypilot-org/skypilot sky/catalog/gcp_catalog.py
  @005261080a6b8102f3d95ff2147a855250f40272, citing the page above) agrees on every g2/a2/a3/a4 row;
  Vertex AI "Training clusters: compute resources" (https://docs.cloud.google.com/vertex-ai/docs/training/
  training-clusters/compute-resources): a4x-highgpu-4g "4 GPUs per node", A3 / A4 8.
  n1_limits (each GPU count with the most vCPUs an N1 machine type may have with it): SkyPilot's
  `_NUM_ACC_TO_MAX_CPU_AND_MEMORY` (same file, "Refer to: https://cloud.google.com/compute/docs/gpus");
  dstack's gpuhunt `accelerator_limits` (dstackai/gpuhunt src/gpuhunt/providers/gcp.py
  @35841515de3792fe6be73b0422ac8901b6b929c8) has the same counts and limits; Google's caliban
  `COMPATIBILITY_TABLE` (google/caliban caliban/platform/cloud/types.py
  @868a2d9e69d96f19b4a945cb7cf3c5ad3f708add, from AI Platform's GPU page) allows no N1 type and count that
  these limits refuse. Compute Engine's own error for 8 P100: "Number of accelerator cards attached to an
  instance must be one of [1, 2, 4]" (google/deepvariant issue 136). 4 P100 allow only 64 vCPUs in some
  zones (SkyPilot): we keep the larger bound, 96, so nothing valid is refused. The tables' memory limits
  are not checked. MachineSpec's note that accelerator_count may be 1 to N on an N-GPU machine is about
  co-scheduling served models, not training;
- regions: Vertex AI "Locations", accelerators (https://cloud.google.com/vertex-ai/docs/general/locations
  #accelerators) as read for issue 25 on 2026-11-25. `regions_complete` False: only part of the list was
  read (H100: "europe-west1-4"); None: not read (no verdict for any region).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
# Strategies that draw on the Preemptible quotas (Spot VMs; Dynamic Workload Scheduler per get_quota_id).
PREEMPTIBLE_STRATEGIES = frozenset({"SPOT", "FLEX_START"})
LOCATIONS_URL = "https://cloud.google.com/vertex-ai/docs/general/locations#accelerators"
LOCATIONS_READ = "2026-11-25"


@dataclass(frozen=True)
class Gpu:
    families: frozenset[str]
    quota_name: str | None = None
    price_words: str | None = None  # a regular expression over SKU descriptions
    flex_start: bool = False
    regions: frozenset[str] | None = None
    regions_complete: bool = True
    # (count, most vCPUs): each count of it an N1 machine takes, with the most vCPUs its type may have then
    n1_limits: tuple[tuple[int, int], ...] = ()


def _regions(*names: str) -> frozenset[str]:
    return frozenset(names)


GPUS: dict[str, Gpu] = {
    "NVIDIA_TESLA_T4": Gpu(frozenset({"n1"}), "T4", r"tesla t4", n1_limits=((1, 48), (2, 48), (4, 96))),
    "NVIDIA_TESLA_P4": Gpu(frozenset({"n1"}), None, r"tesla p4", n1_limits=((1, 24), (2, 48), (4, 96))),
    "NVIDIA_TESLA_P100": Gpu(frozenset({"n1"}), "P100", r"tesla p100", n1_limits=((1, 16), (2, 32), (4, 96))),
    "NVIDIA_TESLA_V100": Gpu(
        frozenset({"n1"}),
        "V100",
        r"tesla v100",
        regions=_regions("us-central1", "us-east1", "us-west1", "europe-west4", "asia-east1"),
        n1_limits=((1, 12), (2, 24), (4, 48), (8, 96)),
    ),
    "NVIDIA_L4": Gpu(
        frozenset({"g2"}),
        "L4",
        r"l4",
        flex_start=True,
        regions=_regions(
            "us-central1",
            "us-east1",
            "us-east4",
            "us-west1",
            "europe-west2",
            "europe-west4",
            "asia-northeast3",
            "asia-south1",
            "asia-southeast1",
            "me-central2",
            "northamerica-northeast2",
        ),
    ),
    "NVIDIA_TESLA_A100": Gpu(
        frozenset({"a2"}),
        "A100",
        r"tesla a100(?! 80gb)",
        flex_start=True,
        regions=_regions(
            "us-central1",
            "us-east1",
            "us-west3",
            "us-west4",
            "europe-west4",
            "asia-northeast3",
            "asia-southeast1",
            "me-west1",
        ),
    ),
    "NVIDIA_A100_80GB": Gpu(frozenset({"a2"}), "A10080GB", r"a100 80gb", flex_start=True),
    "NVIDIA_H100_80GB": Gpu(
        frozenset({"a3"}),
        "H100",
        flex_start=True,
        regions=_regions(
            "us-central1",
            "us-east4",
            "us-east5",
            "us-west1",
            "us-west4",
            "europe-west1",
            "europe-west4",
            "asia-northeast1",
            "asia-northeast3",
            "asia-south1",
            "asia-southeast1",
            "northamerica-northeast2",
        ),
        regions_complete=False,
    ),
    "NVIDIA_H100_MEGA_80GB": Gpu(frozenset({"a3"}), "H100MEGA", flex_start=True),
    "NVIDIA_H200_141GB": Gpu(frozenset({"a3"}), "H200", flex_start=True),
    "NVIDIA_B200": Gpu(frozenset({"a4"}), "B200", flex_start=True),
    "NVIDIA_GB200": Gpu(frozenset({"a4x"}), "B200"),
    "NVIDIA_RTX_PRO_6000": Gpu(frozenset({"g4"})),
}


def offered(accelerator: str, region: str) -> bool | None:
    """True: the Locations page lists the GPU for training in the region; False: its whole list, read, does
    not; None: no verdict (the GPU's list was not read, or only in part and not this region)."""
    gpu = GPUS.get(accelerator)
    if gpu is None or gpu.regions is None:
        return None
    if region in gpu.regions:
        return True
    return False if gpu.regions_complete else None


@dataclass(frozen=True)
class Family:
    gpus_attached: bool = False  # its machine types come with GPUs: Vertex needs the accelerator spelled out
    cpu_quota: bool = False  # its vCPUs count against CustomModelTraining[Preemptible]CPUsPerProjectPerRegion
    price_words: str | None = None  # how SKU descriptions name its cores and memory


FAMILIES: dict[str, Family] = {
    "n1": Family(cpu_quota=True, price_words=r"n1 predefined"),
    "e2": Family(cpu_quota=True, price_words=r"e2"),
    "g2": Family(gpus_attached=True, price_words=r"g2"),
    "a2": Family(gpus_attached=True, price_words=r"a2"),
    "a3": Family(gpus_attached=True),
    "a4": Family(gpus_attached=True),
    "a4x": Family(gpus_attached=True),
    "g4": Family(gpus_attached=True),
}

# Views of the tables above, as their users read them.
FAMILY_ACCELERATORS: dict[str, frozenset[str]] = {
    family: frozenset(kind for kind, gpu in GPUS.items() if family in gpu.families)
    for family in sorted({f for gpu in GPUS.values() for f in gpu.families})
}
GPU_FAMILIES = frozenset(name for name, family in FAMILIES.items() if family.gpus_attached)
CPU_QUOTA_FAMILIES = frozenset(name for name, family in FAMILIES.items() if family.cpu_quota)
FLEX_START_ACCELERATORS = frozenset(kind for kind, gpu in GPUS.items() if gpu.flex_start)
QUOTA_GPU_NAMES = {kind: gpu.quota_name for kind, gpu in GPUS.items() if gpu.quota_name}
GPU_PRICE_WORDS = {kind: gpu.price_words for kind, gpu in GPUS.items() if gpu.price_words}
FAMILY_PRICE_WORDS = {name: family.price_words for name, family in FAMILIES.items() if family.price_words}

# (vCPUs, GiB) per machine type, for prices per core and GiB and for the vCPU quota: Compute Engine's machine
# tables (https://cloud.google.com/compute/docs/general-purpose-machines, .../accelerator-optimized-machines).
# N1 (https://cloud.google.com/compute/docs/machine-types, read 2026-11-27): n1-standard-1 to -96, n1-highmem
# and n1-highcpu -2 to -96. E2 "offer up to 32 vCPUs with up to 128 GB of memory" (same page): e2-highmem
# stops at 16 (8 GiB per vCPU); E2's shared-core types (e2-micro, -small, -medium) are not listed here.
_N1 = {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}
_E2 = {"standard": 4.0, "highmem": 8.0, "highcpu": 1.0}
_E2_MOST_GIB = 128
MACHINE_SHAPES: dict[str, tuple[int, float]] = {
    "n1-standard-1": (1, 3.75),
    **{f"n1-{kind}-{n}": (n, n * gib) for kind, gib in _N1.items() for n in (2, 4, 8, 16, 32, 64, 96)},
    **{
        f"e2-{kind}-{n}": (n, n * gib)
        for kind, gib in _E2.items()
        for n in (2, 4, 8, 16, 32)
        if n * gib <= _E2_MOST_GIB
    },
    **{f"g2-standard-{n}": (n, 4.0 * n) for n in (4, 8, 12, 16, 24, 32, 48, 96)},
    "a2-highgpu-1g": (12, 85.0),
    "a2-highgpu-2g": (24, 170.0),
    "a2-highgpu-4g": (48, 340.0),
    "a2-highgpu-8g": (96, 680.0),
    "a2-megagpu-16g": (96, 1360.0),
    "a2-ultragpu-1g": (12, 170.0),
    "a2-ultragpu-2g": (24, 340.0),
    "a2-ultragpu-4g": (48, 680.0),
    "a2-ultragpu-8g": (96, 1360.0),
}
# vCPUs per GPU of the families whose names end in the GPU count, not the vCPU count (same tables).
VCPUS_PER_GPU = {"a2-highgpu": 12, "a2-ultragpu": 12, "a3-highgpu": 26, "a3-megagpu": 26}

# The GPUs each accelerator-optimized machine type comes with (the sources above): Vertex needs exactly that
# many named. A machine type of such a family missing here gets no verdict on its count.
GPUS_ATTACHED: dict[str, int] = {
    **{f"g2-standard-{n}": 1 for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": 2,
    "g2-standard-48": 4,
    "g2-standard-96": 8,
    **{f"a2-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": 16,
    **{f"a2-ultragpu-{n}g": n for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": n for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": 8,
    "a3-ultragpu-8g": 8,
    "a4-highgpu-8g": 8,
    "a4x-highgpu-4g": 4,
    "g4-standard-48": 1,
    "g4-standard-96": 2,
    "g4-standard-192": 4,
    "g4-standard-384": 8,
}


def accelerator_counts(machine_type: str, accelerator: str) -> tuple[int, ...] | None:
    """How many `accelerator` GPUs `machine_type` takes, or None where the tables above give no verdict."""
    if machine_type in GPUS_ATTACHED:
        return (GPUS_ATTACHED[machine_type],)
    gpu = GPUS.get(accelerator)
    if machine_type.split("-", 1)[0] != "n1" or gpu is None or not gpu.n1_limits:
        return None
    vcpus = MACHINE_SHAPES.get(machine_type, (0, 0.0))[0]  # a type not in MACHINE_SHAPES: counts only
    return tuple(n for n, most in gpu.n1_limits if vcpus <= most)


def n1_vcpu_limit(accelerator: str, count: int) -> int | None:
    """The most vCPUs an N1 machine type may have with `count` of `accelerator`, where the table has it."""
    gpu = GPUS.get(accelerator)
    return dict(gpu.n1_limits).get(count) if gpu else None


def counts_text(counts: tuple[int, ...]) -> str:
    """`1, 2 or 4`; `exactly 1`."""
    if len(counts) == 1:
        return f"exactly {counts[0]}"
    return f"{', '.join(str(c) for c in counts[:-1])} or {counts[-1]}"


# Every machine type the tables above name, by family: a type of a listed family that is not here is a
# misspelling (or a size the family does not have); a family not listed gets no verdict.
MACHINE_TYPES: dict[str, tuple[str, ...]] = {
    family: tuple(
        sorted(
            {name for name in (*MACHINE_SHAPES, *GPUS_ATTACHED) if name.split("-", 1)[0] == family},
            key=lambda name: (name.rsplit("-", 1)[0], int(re.sub(r"\D", "", name.rsplit("-", 1)[1]) or 0)),
        )
    )
    for family in FAMILIES
}
KNOWN_MACHINE_TYPES = frozenset(name for names in MACHINE_TYPES.values() for name in names)
# Compute Engine's predefined names: <family>-<kind>-<size>, e.g. n1-standard-8, a3-highgpu-8g.
WELL_FORMED = re.compile(r"^[a-z][a-z0-9]*-[a-z]+-[0-9]+g?$")


def machine_family(machine_type: str) -> str:
    return machine_type.split("-", 1)[0]


def machine_type_known(machine_type: str) -> bool | None:
    """True: a type the tables list; False: not one of its family's (or not a machine type at all); None: a
    well-formed type of a family the tables do not list (no verdict)."""
    if machine_type in KNOWN_MACHINE_TYPES:
        return True
    if machine_family(machine_type) in MACHINE_TYPES or not WELL_FORMED.match(machine_type):
        return False
    return None
