"""The stack's regional resources that bill by the month, besides buckets: its Artifact Registry repository
(with its size), Vertex AI TensorBoards, Model Registry models, its Vertex AI experiment (and its runs) and
the kill-switch function.

Each is found by the stack's name for it or its labels, in each region asked; each client talks to its
endpoint with Application Default Credentials, or plain gRPC to VERTEX_AI_EMULATOR_HOST (infra/dynamic/
endpoints.py). A kind that cannot be read in a region is named and stops no other.

What each bills (read 2026-11-26): the repository's storage (infra/leftovers/prices.py); a model "not deployed
... not charged" (Vertex AI pricing, https://cloud.google.com/vertex-ai/pricing), a deployed one bills for its
endpoint's nodes (no price read here); a TensorBoard's stored data and the function have no sourced price
here. The experiment: contexts in the project's `default` metadata store (custom_job/experiments.py), kept
after `pulumi destroy`; no figure for metadata storage was read, so it has no sourced price either. Google's
SDK deletes an experiment with its runs (`Experiment.delete`: "Deletes this experiment all the experiment
runs under this experiment", google/cloud/aiplatform/metadata/experiment_resources.py, read 2026-11-27).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1, artifactregistry_v1, functions_v2
from google.cloud.aiplatform_v1.services.metadata_service.transports import MetadataServiceGrpcTransport
from google.cloud.aiplatform_v1.services.model_service.transports import ModelServiceGrpcTransport
from google.cloud.aiplatform_v1.services.tensorboard_service.transports import TensorboardServiceGrpcTransport
from google.cloud.artifactregistry_v1.services.artifact_registry.transports import (
    ArtifactRegistryGrpcTransport,
)
from google.cloud.functions_v2.services.function_service.transports import FunctionServiceGrpcTransport

from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.leftovers import prices, storage_prices
from infra.leftovers.items import Found, Item, size_text

CALL_TIMEOUT_SECONDS = 30.0
NO_PRICE = "no sourced price"


@dataclass(frozen=True)
class Wanted:
    project: str
    labels: dict[str, str]  # pulumi_project, pulumi_stack
    repository_id: str  # vertex-training-<stack>
    function: str | None  # the kill switch's function name, None without one
    home: str  # the region the stack's function lives in
    experiment: str | None = None  # the stack's Vertex AI experiment (config key `experiment`), if linked

    def ours(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        return all(found.get(k) == v for k, v in self.labels.items())

    def parent(self, region: str) -> str:
        return f"projects/{self.project}/locations/{region}"


def _tail(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def repositories(wanted: Wanted, region: str) -> list[Item]:
    client = artifactregistry_v1.ArtifactRegistryClient(
        **client_kwargs(ArtifactRegistryGrpcTransport, "artifactregistry.googleapis.com")
    )
    found = client.list_repositories(parent=wanted.parent(region), timeout=CALL_TIMEOUT_SECONDS)
    items = []
    for repo in found:
        if _tail(repo.name) != wanted.repository_id and not wanted.ours(repo.labels):
            continue
        skus = (
            storage_prices.StorageCatalog.skus(storage_prices.REGISTRY_SERVICE, wanted.project)
            if repo.size_bytes
            else None
        )
        live = storage_prices.registry_rate(skus, region) if skus is not None else None
        cost = prices.repository_cost(repo.size_bytes, live, region)
        items.append(
            Item(
                kind="repository",
                name=repo.name,
                region=region,
                state=size_text(repo.size_bytes),
                bills=repo.size_bytes > 0,
                cost=cost.text if repo.size_bytes else "free (empty)",
                remove=(
                    f"gcloud artifacts repositories delete {_tail(repo.name)} --location={region} "
                    f"--project={wanted.project}"
                ),
                monthly_usd=cost.usd if repo.size_bytes else 0.0,
                monthly_is_bound=cost.bound and bool(repo.size_bytes),
                price_source=cost.source,
                size_bytes=repo.size_bytes,
            )
        )
    return items


def tensorboards(wanted: Wanted, region: str) -> list[Item]:
    client = aiplatform_v1.TensorboardServiceClient(
        **client_kwargs(TensorboardServiceGrpcTransport, vertex_endpoint(region))
    )
    found = client.list_tensorboards(parent=wanted.parent(region), timeout=CALL_TIMEOUT_SECONDS)
    return [
        Item(
            kind="TensorBoard",
            name=board.name,
            region=region,
            state=f"{board.run_count} run(s)",
            bills=True,
            cost=f"{NO_PRICE} (its stored data bills by the month)",
            remove=(
                f"gcloud ai tensorboards delete {_tail(board.name)} --region={region} "
                f"--project={wanted.project}"
            ),
        )
        for board in found
        if wanted.ours(board.labels)
    ]


def models(wanted: Wanted, region: str) -> list[Item]:
    client = aiplatform_v1.ModelServiceClient(
        **client_kwargs(ModelServiceGrpcTransport, vertex_endpoint(region))
    )
    labels = " AND ".join(f'labels.{k}="{v}"' for k, v in wanted.labels.items())
    found = client.list_models(
        request={"parent": wanted.parent(region), "filter": labels}, timeout=CALL_TIMEOUT_SECONDS
    )
    items = []
    for model in found:
        if not wanted.ours(model.labels):
            continue
        # Each version keeps its own deployed_models (model.proto), and model_service.proto does not say which
        # version ListModels answers a model with: every version is read, so a deployed one is never missed.
        versions = client.list_model_versions(name=model.name, timeout=CALL_TIMEOUT_SECONDS)
        deployed = len({ref.endpoint for version in versions for ref in version.deployed_models})
        remove = f"gcloud ai models delete {_tail(model.name)} --region={region} --project={wanted.project}"
        items.append(
            Item(
                kind="model",
                name=model.name,
                region=region,
                state=f"deployed to {deployed} endpoint(s)" if deployed else "registered, not deployed",
                bills=bool(deployed),
                cost=(
                    f"{NO_PRICE} (a deployed model bills for its endpoint's nodes)"
                    if deployed
                    else "free while not deployed (Vertex AI pricing; its files bill in their bucket)"
                ),
                remove=("undeploy it from each endpoint, then " if deployed else "") + remove,
                monthly_usd=None if deployed else 0.0,
            )
        )
    return items


def experiments(wanted: Wanted, region: str) -> list[Item]:
    """The stack's experiment in its home region (where its training jobs link it), with its run count."""
    if wanted.experiment is None or region != wanted.home:
        return []
    client = aiplatform_v1.MetadataServiceClient(
        **client_kwargs(MetadataServiceGrpcTransport, vertex_endpoint(region))
    )
    store = f"{wanted.parent(region)}/metadataStores/default"
    name = f"{store}/contexts/{wanted.experiment}"
    try:
        client.get_context(name=name, timeout=CALL_TIMEOUT_SECONDS)
    except gexc.NotFound:
        return []
    runs = client.list_contexts(
        request={"parent": store, "filter": f'parent_contexts:"{name}"'}, timeout=CALL_TIMEOUT_SECONDS
    )
    count = sum(1 for _ in runs)
    return [
        Item(
            kind="experiment",
            name=name,
            region=region,
            state=f"{count} run(s)",
            bills=True,
            cost=f"{NO_PRICE} (its metadata is stored in the project's metadata store)",
            remove=(
                'python -c "from google.cloud import aiplatform; '
                f"aiplatform.Experiment('{wanted.experiment}', project='{wanted.project}', "
                f"location='{region}').delete()\""
            ),
        )
    ]


def function(wanted: Wanted, region: str) -> list[Item]:
    if wanted.function is None or region != wanted.home:
        return []
    client = functions_v2.FunctionServiceClient(
        **client_kwargs(FunctionServiceGrpcTransport, "cloudfunctions.googleapis.com")
    )
    name = f"{wanted.parent(region)}/functions/{wanted.function}"
    try:
        found = client.get_function(name=name, timeout=CALL_TIMEOUT_SECONDS)
    except gexc.NotFound:
        return []
    return [
        Item(
            kind="function",
            name=found.name,
            region=region,
            state=functions_v2.Function.State(found.state).name,
            bills=True,
            cost=NO_PRICE,
            remove=f"gcloud functions delete {wanted.function} --region={region} --project={wanted.project}",
        )
    ]


FINDERS: tuple[tuple[str, Callable[[Wanted, str], list[Item]]], ...] = (
    ("Artifact Registry repositories", repositories),
    ("TensorBoards", tensorboards),
    ("Model Registry models", models),
    ("Vertex AI experiments", experiments),
    ("the kill-switch function", function),
)


def find(wanted: Wanted, regions: Iterable[str]) -> Found:
    """Every finder in every region; one that fails is named (`<region>: <what> (<why>)`), stops no other."""
    found = Found()
    for region in dict.fromkeys(regions):
        for what, finder in FINDERS:
            try:
                found.items += finder(wanted, region)
            except Exception as exc:  # an API error, missing credentials: this kind in this region is unknown
                reason = str(getattr(exc, "message", "") or exc).splitlines()[0]
                found.cannot_tell.append(f"{region}: {what} ({type(exc).__name__}: {reason})")
    return found
