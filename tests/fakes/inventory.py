"""Fakes of the read calls `infra.leftovers` makes on the services holding a stack's monthly-billed resources,
served over real gRPC so the real clients drive them through VERTEX_AI_EMULATOR_HOST:

- Artifact Registry ListRepositories (`parent` projects/P/locations/L; Repository.size_bytes "The size, in
  bytes, of all artifact storage in this repository", artifactregistry v1 repository.proto, read 2026-11-26);
- Cloud Functions v2 GetFunction (NOT_FOUND for a function that does not exist);
- Vertex AI TensorboardService ListTensorboards and ModelService ListModels (`parent` projects/P/locations/R;
  ListModels' filter takes `labels.key="value"` terms, model_service.proto) and ListModelVersions (`name`
  the model; every version, each with its own `deployed_models`). model_service.proto does not say which
  version ListModels answers a model with; the fake answers with the default one, the reading under which a
  deployed non-default version shows only in ListModelVersions.
Resources live under their location, as each service keeps them; each list answers a page at a time with the
standard `next_page_token` (AIP-158); `region_down[R]` fails every call on R.
"""

from __future__ import annotations

import grpc
from google.cloud import aiplatform_v1, artifactregistry_v1, functions_v2

from tests.fakes import filters
from tests.fakes.filters import Matcher, compare, token_pattern
from tests.fakes.grpc_fake import Abort, FakeService, page_of
from tests.fakes.vertex import region_of


def _under(name: str, parent: str) -> bool:
    return name.startswith(parent + "/")


class FakeInventory(FakeService):
    def __init__(self) -> None:
        super().__init__()
        self.repositories: dict[str, artifactregistry_v1.Repository] = {}
        self.functions: dict[str, functions_v2.Function] = {}
        self.tensorboards: dict[str, aiplatform_v1.Tensorboard] = {}
        self.models: dict[str, aiplatform_v1.Model] = {}  # model name -> its default version
        self.versions: dict[str, list[aiplatform_v1.Model]] = {}  # model name -> every version, oldest first
        self.region_down: dict[str, grpc.StatusCode] = {}
        # How many results one page holds when the request sets no page_size (each list pages, AIP-158).
        self.list_page_size = 100

    def handlers(self) -> tuple[grpc.GenericRpcHandler, ...]:
        return (
            self._service(
                "google.devtools.artifactregistry.v1.ArtifactRegistry",
                {
                    "ListRepositories": (
                        self._list_repositories,
                        artifactregistry_v1.ListRepositoriesRequest,
                        artifactregistry_v1.ListRepositoriesResponse.serialize,
                    )
                },
            ),
            self._service(
                "google.cloud.functions.v2.FunctionService",
                {
                    "GetFunction": (
                        self._get_function,
                        functions_v2.GetFunctionRequest,
                        functions_v2.Function.serialize,
                    )
                },
            ),
            self._service(
                "google.cloud.aiplatform.v1.TensorboardService",
                {
                    "ListTensorboards": (
                        self._list_tensorboards,
                        aiplatform_v1.ListTensorboardsRequest,
                        aiplatform_v1.ListTensorboardsResponse.serialize,
                    )
                },
            ),
            self._service(
                "google.cloud.aiplatform.v1.ModelService",
                {
                    "ListModels": (
                        self._list_models,
                        aiplatform_v1.ListModelsRequest,
                        aiplatform_v1.ListModelsResponse.serialize,
                    ),
                    "ListModelVersions": (
                        self._list_model_versions,
                        aiplatform_v1.ListModelVersionsRequest,
                        aiplatform_v1.ListModelVersionsResponse.serialize,
                    ),
                },
            ),
        )

    def _reachable(self, resource: str) -> None:
        code = self.region_down.get(region_of(resource))
        if code is not None:
            raise Abort(code, f"injected {code.name} in {region_of(resource)}")

    # --- control -------------------------------------------------------------------------------------
    def add_repository(self, parent: str, repository_id: str, size_bytes: int, labels: dict[str, str]) -> str:
        name = f"{parent}/repositories/{repository_id}"
        self.repositories[name] = artifactregistry_v1.Repository(
            name=name,
            format_=artifactregistry_v1.Repository.Format.DOCKER,
            size_bytes=size_bytes,
            labels=labels,
        )
        return name

    def add_function(self, parent: str, function_id: str) -> str:
        name = f"{parent}/functions/{function_id}"
        self.functions[name] = functions_v2.Function(name=name, state=functions_v2.Function.State.ACTIVE)
        return name

    def add_tensorboard(self, parent: str, tensorboard_id: str, labels: dict[str, str]) -> str:
        name = f"{parent}/tensorboards/{tensorboard_id}"
        self.tensorboards[name] = aiplatform_v1.Tensorboard(
            name=name, display_name=tensorboard_id, labels=labels
        )
        return name

    def add_model(self, parent: str, model_id: str, labels: dict[str, str], deployed: int = 0) -> str:
        name = f"{parent}/models/{model_id}"
        refs = [
            aiplatform_v1.DeployedModelRef(endpoint=f"{parent}/endpoints/{i}", deployed_model_id=str(i))
            for i in range(deployed)
        ]
        self.models[name] = aiplatform_v1.Model(
            name=name, version_id="1", version_aliases=["default"], labels=labels, deployed_models=refs
        )
        self.versions[name] = [self.models[name]]
        return name

    def add_model_version(self, model: str, deployed: int = 0) -> str:
        """A newer, non-default version of `model` (its labels), deployed to `deployed` endpoints."""
        parent = model.split("/models/")[0]
        vid = str(len(self.versions[model]) + 1)
        refs = [
            aiplatform_v1.DeployedModelRef(endpoint=f"{parent}/endpoints/v{vid}-{i}", deployed_model_id=vid)
            for i in range(deployed)
        ]
        labels = dict(self.models[model].labels)
        self.versions[model].append(
            aiplatform_v1.Model(name=model, version_id=vid, labels=labels, deployed_models=refs)
        )
        return f"{model}@{vid}"

    # --- methods -------------------------------------------------------------------------------------
    def _list_repositories(
        self, request: artifactregistry_v1.ListRepositoriesRequest
    ) -> artifactregistry_v1.ListRepositoriesResponse:
        self._reachable(request.parent)
        found = [r for name, r in self.repositories.items() if _under(name, request.parent)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return artifactregistry_v1.ListRepositoriesResponse(repositories=page, next_page_token=token)

    def _get_function(self, request: functions_v2.GetFunctionRequest) -> functions_v2.Function:
        self._reachable(request.name)
        if request.name not in self.functions:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"Resource '{request.name}' was not found")
        return self.functions[request.name]

    def _list_tensorboards(
        self, request: aiplatform_v1.ListTensorboardsRequest
    ) -> aiplatform_v1.ListTensorboardsResponse:
        self._reachable(request.parent)
        found = [t for name, t in self.tensorboards.items() if _under(name, request.parent)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListTensorboardsResponse(tensorboards=page, next_page_token=token)

    def _list_models(self, request: aiplatform_v1.ListModelsRequest) -> aiplatform_v1.ListModelsResponse:
        self._reachable(request.parent)
        matches = _model_filter(request.filter) if request.filter else (lambda _model: True)
        found = [m for name, m in self.models.items() if _under(name, request.parent) and matches(m)]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListModelsResponse(models=page, next_page_token=token)

    def _list_model_versions(
        self, request: aiplatform_v1.ListModelVersionsRequest
    ) -> aiplatform_v1.ListModelVersionsResponse:
        self._reachable(request.name)
        if request.name not in self.versions:
            raise Abort(grpc.StatusCode.NOT_FOUND, f'The Model "{request.name}" does not exist.')
        found = self.versions[request.name]
        page, token = page_of(found, request.page_token, request.page_size, self.list_page_size)
        return aiplatform_v1.ListModelVersionsResponse(models=page, next_page_token=token)


_TOKENS = token_pattern(r"[A-Za-z_][\w.\-]*", ("=", "!="))


def _model_filter(text: str) -> Matcher:
    def comparison(field: str, op: str, value: str) -> Matcher:
        if field.startswith("labels."):
            key = field.removeprefix("labels.")
            return compare(lambda model: model.labels.get(key), op, value)
        if field == "display_name":
            return compare(lambda model: model.display_name, op, value)
        raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unsupported filter field {field!r}")

    return filters.parse_filter(text, _TOKENS, comparison)
