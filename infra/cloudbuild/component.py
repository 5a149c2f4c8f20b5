"""CloudBuildImage: upload a build context's archive (trainer/ or serving/), build it in Cloud Build as the
stack's builder account."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_gcp as gcp

from infra.cloudbuild import context as build_context
from infra.cloudbuild.identity import BuilderIdentity
from infra.cloudbuild.resource import ImageBuild, ImageBuildArgs
from infra.components.dockerfile import base_images, dockerfile_text
from infra.components.image import IMAGE_NAME, TRAINER_DIR, data_code_hash
from infra.components.options import children
from infra.components.registry import repository_url

# Where archives are written locally before upload, and their prefix in the stack bucket.
ARCHIVE_DIR = Path(__file__).resolve().parents[2] / ".local" / "cloudbuild"
SOURCE_PREFIX = "cloudbuild/"
BUILD_TIMEOUT_SECONDS = 3600
REQUIRED_APIS = ("cloudbuild.googleapis.com",)


class CloudBuildImage(pulumi.ComponentResource):
    """The same surface as TrainerImage (`ref`: image@digest, unknown in preview; `data_uri`; `image`) or,
    with `data_tag=False` and another `image_name`, as ServingImage. A second image passes the first one's
    `identity`: one builder account builds both."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        region: str,
        stack: str,
        repository_id: str,
        repository: pulumi.Input[str],
        bucket: pulumi.Input[str],
        context: Path = TRAINER_DIR,
        archive_dir: Path = ARCHIVE_DIR,
        image_name: str = IMAGE_NAME,
        data_tag: bool = True,
        identity: BuilderIdentity | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:cloudbuild:CloudBuildImage", name, None, opts)
        self.tag = build_context.archive_tag(context)
        url = repository_url(project, region, repository_id)
        self.uri = f"{url}/{image_name}:{self.tag}"
        extra_tags = [f"data-{data_code_hash(context)}"] if data_tag else []
        self.data_uri = f"{url}/{image_name}:{extra_tags[0]}" if extra_tags else ""
        archive = build_context.write_archive(archive_dir, context)
        self.identity = identity or BuilderIdentity(
            "builder",
            project=project,
            region=region,
            stack=stack,
            bucket=bucket,
            source_prefix=SOURCE_PREFIX,
            repository=repository,
            opts=children(self, opts),
        )
        # The engine compares file assets by content hash only (sdk/go/common/resource/asset.go, Equals), so
        # the absolute path differing between machines (a laptop, CI) does not touch the object.
        self.source = gcp.storage.BucketObject(
            "context",
            bucket=bucket,
            name=f"{SOURCE_PREFIX}{archive.name}",
            source=pulumi.FileAsset(str(archive)),
            content_type="application/gzip",
            opts=children(self, opts),
        )
        self.image = ImageBuild(
            "image",
            ImageBuildArgs(
                project=project,
                region=region,
                repository=repository,
                image_name=image_name,
                tag=self.tag,
                extra_tags=extra_tags,
                source_bucket=self.source.bucket,
                source_object=self.source.name,
                # Pinned: the job account may write the bucket; the build takes the object this up uploaded.
                source_generation=self.source.generation,
                service_account=self.identity.email,
                timeout_seconds=BUILD_TIMEOUT_SECONDS,
                base_images=base_images(dockerfile_text(context)),
            ),
            # A new builder's grants take minutes to apply: a build refused for them is submitted again by the
            # provider, up to IAM's documented worst case (cloudbuild/provider.py, dynamic/propagation.py).
            opts=children(self, opts, depends_on=[self.source, *self.identity.grants]),
        )
        self.ref = self.image.image_ref
        self.digest = self.image.digest
        # How the image was made, by digest, for each run's run.json (`image_sources`). An image built before
        # the build recorded it has neither: "" and [].
        self.sources: pulumi.Output[dict[str, Any]] = pulumi.Output.all(
            self.image.builder_image, self.image.resolved_base_images
        ).apply(lambda made: {"builder_image": made[0] or "", "base_images": list(made[1] or [])})
        self.register_outputs({"ref": self.ref, "digest": self.digest, "tag": self.tag})
