"""Pure functions for the image build resource: props, validation, the Cloud Build request, results."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from google.cloud.devtools import cloudbuild_v1
from google.protobuf import duration_pb2

from infra.dynamic.preview_inputs import is_unknown

Status = cloudbuild_v1.Build.Status

# Every input; a change to any but these replaces the resource (a new image).
INPUTS = (
    "project",
    "region",
    "repository",
    "image_name",
    "tag",
    "extra_tags",
    "source_bucket",
    "source_object",
    "source_generation",
    "service_account",
    "timeout_seconds",
    "poll_interval_seconds",
    "base_images",
)
# A new generation of the same context object (same name: same content hash) needs no new image; stacks
# whose state predates the pin take it in place too. `base_images` (the Dockerfile's FROM images, whose
# digests a build records) changes only with the Dockerfile, whose change is a new tag already; state from
# before the record takes it in place, keeping its image.
IN_PLACE_INPUTS = ("poll_interval_seconds", "base_images")
DEFAULTS: dict[str, Any] = {
    "extra_tags": [],
    "timeout_seconds": 3600,
    "poll_interval_seconds": 15.0,
    "base_images": [],
}
REQUIRED = ("project", "region", "repository", "image_name", "tag", "source_bucket", "source_object")

# https://cloud.google.com/build/docs/api/reference/rest/v1/projects.builds#Build.Status
LIVE = frozenset({Status.PENDING, Status.QUEUED, Status.WORKING})
TERMINAL = frozenset(
    {
        Status.SUCCESS,
        Status.FAILURE,
        Status.INTERNAL_ERROR,
        Status.TIMEOUT,
        Status.CANCELLED,
        Status.EXPIRED,
    }
)
# The builder Google documents for `docker build` steps. By name, not digest: no first-party source readable
# here gives its current digest; each build records the one it ran (`builder_image`, from
# Results.build_step_images) instead (docs/ci.md, "Supply chain").
DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
# Docker's tag grammar (distribution/reference); the Cloud Build tag derived from it stays within it too.
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
# An image reference as a FROM line names it (distribution/reference: [registry/]path[:tag][@digest]).
_IMAGE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
# The step that pulls each base image and writes `<ref>@<digest>` lines to $BUILDER_OUTPUT/output, which
# Cloud Build returns as Results.build_step_outputs[0] (google/devtools/cloudbuild/v1/cloudbuild.proto:
# "Cloud Builders can produce this output by writing to `$BUILDER_OUTPUT/output`"; first 50KB kept). The
# docker build that follows finds each base already in the host's image store and uses it (`docker build`
# pulls a FROM image only when absent, or with --pull). `docker pull` prints `Digest: sha256:...`.
RESOLVE_STEP_ID = "resolve-base-images"
_RESOLVE_SCRIPT = """\
#!/bin/sh
set -eu
for ref in {refs}; do
  digest="$(docker pull "$ref" | sed -n 's/^Digest: //p')"
  if [ -z "$digest" ]; then echo "docker pull $ref reported no digest" >&2; exit 1; fi
  echo "$ref@$digest" >> "$BUILDER_OUTPUT/output"
done
"""
# Cloud Build caps a build's timeout at 24 hours.
MAX_TIMEOUT_SECONDS = 24 * 3600


def with_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    result = {**DEFAULTS, **props}
    # Pulumi sends every number as a double.
    if isinstance(result["timeout_seconds"], float) and result["timeout_seconds"].is_integer():
        result["timeout_seconds"] = int(result["timeout_seconds"])
    return result


def validate(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(property, reason) for each problem; unknown (preview) values are skipped."""
    failures: list[tuple[str, str]] = []
    for key in REQUIRED:
        value = props.get(key)
        if not is_unknown(value) and (not isinstance(value, str) or not value):
            failures.append((key, f"{key} is required (a non-empty string)"))
    for key in ("tag",):
        value = props.get(key)
        if isinstance(value, str) and value and not is_unknown(value) and not _TAG.match(value):
            failures.append((key, f"{value!r} is not an image tag (letters, digits, _ . -; 128 at most)"))
    extra = props.get("extra_tags", [])
    if not is_unknown(extra):
        bad = [t for t in extra if not isinstance(t, str) or not _TAG.match(t)]
        if bad:
            failures.append(("extra_tags", f"{bad!r} are not valid image tags"))
    timeout = props.get("timeout_seconds")
    in_range = (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and 0 < timeout <= MAX_TIMEOUT_SECONDS
    )
    if not is_unknown(timeout) and not in_range:
        failures.append(("timeout_seconds", f"must be between 1 and {MAX_TIMEOUT_SECONDS} seconds"))
    bases = props.get("base_images", [])
    if not is_unknown(bases):
        bad = [b for b in bases if not isinstance(b, str) or not _IMAGE_REF.match(b)]
        if bad or not isinstance(bases, list):
            failures.append(("base_images", f"{bad or bases!r}: not image references (FROM lines' images)"))
    poll = props.get("poll_interval_seconds")
    if not is_unknown(poll) and (isinstance(poll, bool) or not isinstance(poll, int | float) or poll <= 0):
        failures.append(("poll_interval_seconds", "must be a positive number of seconds"))
    return failures


def parent(props: Mapping[str, Any]) -> str:
    """Regional builds are created under projects/{p}/locations/{region} (builds.create reference)."""
    return f"projects/{props['project']}/locations/{props['region']}"


def image(props: Mapping[str, Any]) -> str:
    """The image's name without tag: {region}-docker.pkg.dev/{project}/{repository}/{image_name}."""
    return f"{props['region']}-docker.pkg.dev/{props['project']}/{props['repository']}/{props['image_name']}"


def image_uris(props: Mapping[str, Any]) -> list[str]:
    """The content tag first, then the extra tags: every one is pushed by the same build."""
    return [f"{image(props)}:{tag}" for tag in [props["tag"], *props["extra_tags"]]]


def build_tag(props: Mapping[str, Any]) -> str:
    """The Cloud Build tag (not a Docker tag) that finds this image's builds again after an interruption."""
    return f"{props['image_name']}-{props['tag']}"[:128]


def registry_tag_name(props: Mapping[str, Any]) -> str:
    """Artifact Registry's resource name of the content tag (package names URL-encode '/')."""
    package = props["image_name"].replace("/", "%2F")
    return (
        f"projects/{props['project']}/locations/{props['region']}/repositories/{props['repository']}"
        f"/packages/{package}/tags/{props['tag']}"
    )


def service_account_name(props: Mapping[str, Any]) -> str:
    """Build.service_account takes the full resource name, not the e-mail."""
    return f"projects/{props['project']}/serviceAccounts/{props['service_account']}"


def resolve_script(base_images: Sequence[str]) -> str:
    """The shell script of the step that records each base image's digest (refs quoted for the shell)."""
    return _RESOLVE_SCRIPT.format(refs=" ".join(shlex.quote(ref) for ref in base_images))


def steps(props: Mapping[str, Any]) -> list[cloudbuild_v1.BuildStep]:
    """With base images to record: their resolve step, then `docker build`; else `docker build` alone."""
    tag_args = [arg for uri in image_uris(props) for arg in ("--tag", uri)]
    build = cloudbuild_v1.BuildStep(
        name=DOCKER_BUILDER, args=["build", "--file", "Dockerfile", *tag_args, "."]
    )
    if not props.get("base_images"):
        return [build]
    resolve = cloudbuild_v1.BuildStep(
        name=DOCKER_BUILDER, id=RESOLVE_STEP_ID, script=resolve_script(props["base_images"])
    )
    return [resolve, build]


def build_request(props: Mapping[str, Any]) -> cloudbuild_v1.Build:
    """`docker build` of the archive's Dockerfile, pushed under every tag, run as the builder account; the
    base images' digests recorded first."""
    uris = image_uris(props)
    return cloudbuild_v1.Build(
        source=cloudbuild_v1.Source(
            storage_source=cloudbuild_v1.StorageSource(
                bucket=props["source_bucket"],
                object_=props["source_object"],
                generation=int(props.get("source_generation") or 0),
            )
        ),
        steps=steps(props),
        # Pushed with the builder account's credentials after the steps; their digests land in results.
        images=uris,
        tags=[build_tag(props)],
        service_account=service_account_name(props),
        # A user-specified service account cannot write to the default logs bucket; Cloud Logging is
        # where we read a failed build's log back (no GCS access needed).
        options=cloudbuild_v1.BuildOptions(logging=cloudbuild_v1.BuildOptions.LoggingMode.CLOUD_LOGGING_ONLY),
        timeout=duration_pb2.Duration(seconds=int(props["timeout_seconds"])),
    )


def digest_of(build: cloudbuild_v1.Build, uri: str) -> str | None:
    """The pushed digest (sha256:...) of `uri` in a finished build's results."""
    for built in build.results.images:
        if built.name == uri and built.digest:
            return built.digest
    return None


def builder_image(build: cloudbuild_v1.Build) -> str:
    """`gcr.io/cloud-builders/docker@sha256:...` that ran the docker build step (the last step): Results.
    build_step_images holds "build step digests, in the order corresponding to build step indices"."""
    step_images = list(build.results.build_step_images)
    if len(step_images) != len(build.steps) or not step_images[-1]:
        return ""
    return f"{build.steps[-1].name}@{step_images[-1]}"


def resolved_base_images(build: cloudbuild_v1.Build) -> list[str]:
    """The `<ref>@sha256:...` lines the resolve step wrote, when the build has one; [] otherwise."""
    outputs = list(build.results.build_step_outputs)
    if not build.steps or build.steps[0].id != RESOLVE_STEP_ID or not outputs:
        return []
    lines = outputs[0].decode("utf-8", "replace").splitlines()
    return [line.strip() for line in lines if re.fullmatch(r"\S+@sha256:[0-9a-f]{64}", line.strip())]


def digest_from_version(version: str) -> str:
    """Artifact Registry's version name ends in the manifest digest: .../versions/sha256:abc..."""
    return version.rsplit("/", 1)[-1]


def console_url(build: cloudbuild_v1.Build, props: Mapping[str, Any]) -> str:
    """The build's page in the console (the service's own log_url when it gave one)."""
    if build.log_url:
        return build.log_url
    return (
        f"https://console.cloud.google.com/cloud-build/builds;region={props['region']}/{build.id}"
        f"?project={props['project']}"
    )
