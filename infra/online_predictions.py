"""`python -m infra.online_predictions (--stack NAME | --endpoint NAME) IMAGES...`: send local or gs:// images
(files or folders of JPEG/PNG) to the stack's deployed model and print the same table as
`python -m infra.predictions` (image, class, probability, or the image's error), or CSV.

Each request carries `{"instances": [{"image_bytes": {"b64": ...}}, ...]}`, as the serving container takes it
(serving/, docs/serving.md), through the real PredictionServiceClient on the endpoint's region (or
VERTEX_AI_EMULATOR_HOST). Vertex accepts a request "up to the payload limit size (currently, 1.5MB)"
(`gcloud ai endpoints predict` reference, https://cloud.google.com/sdk/gcloud/reference/ai/endpoints/predict,
read 2026-11-29): images go in as many requests as keep each under 1,500,000 bytes; an image too large for
a request of its own is reported as that image's error and never sent.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exceptions
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.prediction_service.transports import PredictionServiceGrpcTransport
from google.protobuf import json_format

from infra.dynamic.endpoints import client_kwargs, vertex_endpoint
from infra.predictions import print_rows
from infra.vertex.batch import results

REQUEST_LIMIT_BYTES = 1_500_000
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
CALL_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Image:
    name: str  # its path or gs:// URI, as the table shows it
    data: bytes


def _gcs_images(uri: str) -> Iterator[Image]:
    from google.cloud import storage  # type: ignore[attr-defined]  # no py.typed

    bucket, _, prefix = uri.removeprefix("gs://").partition("/")
    client = storage.Client()
    blobs = [b for b in client.list_blobs(bucket, prefix=prefix) if b.name.lower().endswith(IMAGE_SUFFIXES)]
    for blob in sorted(blobs, key=lambda b: b.name):
        yield Image(f"gs://{bucket}/{blob.name}", blob.download_as_bytes())


def images(sources: Sequence[str]) -> Iterator[Image]:
    """Each source's images in order: a file, a folder's JPEG/PNG files (sorted), a gs:// file or prefix."""
    for source in sources:
        if source.startswith("gs://"):
            yield from _gcs_images(source)
            continue
        path = Path(source).expanduser()
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES):
                yield Image(str(found), found.read_bytes())
        else:
            yield Image(str(path), path.read_bytes())


def instance(image: Image) -> dict[str, Any]:
    return {"image_bytes": {"b64": base64.b64encode(image.data).decode("ascii")}}


def request_size(endpoint: str, batch: Sequence[Image]) -> int:
    """The PredictRequest's size on the wire (its JSON body over REST is about the same)."""
    request = aiplatform_v1.PredictRequest.pb()(endpoint=endpoint)
    for image in batch:
        json_format.ParseDict(instance(image), request.instances.add())
    return int(request.ByteSize())


def batches(endpoint: str, found: Sequence[Image], limit: int = REQUEST_LIMIT_BYTES) -> Iterator[list[Image]]:
    """Consecutive images in requests under `limit`; an image over it alone comes back as a batch of one."""
    batch: list[Image] = []
    for image in found:
        if batch and request_size(endpoint, [*batch, image]) > limit:
            yield batch
            batch = []
        batch.append(image)
    if batch:
        yield batch


def prediction_client(region: str) -> aiplatform_v1.PredictionServiceClient:
    return aiplatform_v1.PredictionServiceClient(
        **client_kwargs(PredictionServiceGrpcTransport, vertex_endpoint(region))
    )


def predict(
    client: aiplatform_v1.PredictionServiceClient, endpoint: str, found: Sequence[Image]
) -> list[results.Row]:
    rows = []
    for batch in batches(endpoint, found):
        if request_size(endpoint, batch) > REQUEST_LIMIT_BYTES:
            rows.append(
                results.Row(
                    batch[0].name,
                    error=f"too large for one request (Vertex's limit is 1.5 MB; {len(batch[0].data)} bytes "
                    "before base64): not sent; resize it",
                )
            )
            continue
        request = aiplatform_v1.PredictRequest.pb()(endpoint=endpoint)
        for image in batch:
            json_format.ParseDict(instance(image), request.instances.add())
        response = client.predict(
            request=aiplatform_v1.PredictRequest.wrap(request), timeout=CALL_TIMEOUT_SECONDS
        )
        answers = [
            json_format.MessageToDict(v) for v in aiplatform_v1.PredictResponse.pb(response).predictions
        ]
        if len(answers) != len(batch):
            raise ValueError(f"the endpoint answered {len(answers)} predictions for {len(batch)} images")
        rows += [
            results.row({"key": image.name, "prediction": p}) for image, p in zip(batch, answers, strict=True)
        ]
    return rows


def stack_endpoint(stack: str, root: Path) -> str:
    """The endpoint the stack's `vertex-training:endpoint` key makes (its name needs no Pulumi CLI)."""
    from infra.config.stack_file import load_stack
    from infra.leftovers.command import pulumi_project
    from infra.workloads.serving import endpoint_id

    cfg = load_stack(stack, root)
    if cfg.endpoint is None:
        raise ValueError(f"stack {stack} sets no vertex-training:endpoint: it serves no model online")
    name = endpoint_id(pulumi_project(root), stack, cfg.region)
    return f"projects/{cfg.gcp_project}/locations/{cfg.region}/endpoints/{name}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m infra.online_predictions", description=__doc__)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="the stack whose endpoint to ask (Pulumi.<stack>.yaml)")
    where.add_argument("--endpoint", help="projects/P/locations/R/endpoints/E (the stack's endpoint_name)")
    p.add_argument("images", nargs="+", metavar="IMAGE", help="JPEG/PNG files or folders, local or gs://")
    p.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")
    p.add_argument("--all-classes", action="store_true", help="one row per class of each image")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, root: Path | None = None) -> int:
    args = parse_args(argv)
    try:
        endpoint = args.endpoint or stack_endpoint(args.stack, root or Path.cwd())
        region = endpoint.split("/")[3]
        found = list(images(args.images))
        if not found:
            raise ValueError(f"no JPEG or PNG images in {' '.join(args.images)}")
        rows = predict(prediction_client(region), endpoint, found)
    except (gexc.GoogleAPICallError, auth_exceptions.GoogleAuthError, OSError, ValueError, IndexError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if print_rows(rows, args.csv, args.all_classes, endpoint) else 0


if __name__ == "__main__":
    sys.exit(main())
