"""ImageBuildProvider: the Pulumi dynamic provider that builds and pushes the trainer image in Cloud Build.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It holds no state; the API clients are made inside each method.
"""

from __future__ import annotations

import time
from typing import Any

from google.cloud.devtools import cloudbuild_v1
from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from infra.cloudbuild import spec
from infra.cloudbuild.builds import BuildApi
from infra.cloudbuild.errors import BuildError
from infra.dynamic import propagation
from infra.dynamic.base import SpecProvider
from infra.dynamic.polling import poll_until

# Time on top of the build's own timeout for queueing before the provider gives up and cancels it.
QUEUE_GRACE_SECONDS = 1800.0
CANCEL_WAIT_SECONDS = 300.0
# How a build fails when its builder's grants made by this `up` (bucket read, log writer, repository writer:
# cloudbuild/identity.py) are not applied yet: its source cannot be fetched, its logs not written, its image
# not pushed (Cloud Build's FailureInfo types), with a refusal in the detail. Such a build is submitted again
# (dynamic/propagation.py) instead of waiting a fixed time before the first build.
Failure = cloudbuild_v1.Build.FailureInfo.FailureType
GRANT_FAILURES = frozenset(
    {Failure.FETCH_SOURCE_FAILED, Failure.LOGGING_FAILURE, Failure.PUSH_FAILED, Failure.PUSH_NOT_AUTHORIZED}
)
WAITING_FOR = "the builder's new grants (bucket, logs, repository) to apply"


def _log(props: dict[str, Any], message: str) -> None:
    ImageBuildProvider().log(props, message)


def _id(props: dict[str, Any]) -> str:
    return f"{spec.image(props)}:{props['tag']}"


# What a build records of how it was made: kept as they are by read and update (the registry knows neither).
BUILD_OUTPUTS = ("build_name", "log_url", "builder_image", "resolved_base_images")


def _outputs(props: dict[str, Any], digest: str, build: cloudbuild_v1.Build | None) -> dict[str, Any]:
    """Inputs, the pushed digest and the build that pushed it: its builder image and the base images it
    resolved, by digest (empty when the registry already had the image)."""
    return {
        **{k: props[k] for k in spec.INPUTS if k in props},
        "digest": digest,
        "image_ref": f"{spec.image(props)}@{digest}",
        "build_name": build.name if build else "",
        "log_url": spec.console_url(build, props) if build else "",
        "builder_image": spec.builder_image(build) if build else "",
        "resolved_base_images": spec.resolved_base_images(build) if build else [],
    }


def _poll(
    api: BuildApi, build: cloudbuild_v1.Build, props: dict[str, Any], until: float
) -> cloudbuild_v1.Build:
    """Poll with backoff until the build is terminal or `until` passes; report status changes on stderr."""

    def seen(before: cloudbuild_v1.Build, now: cloudbuild_v1.Build) -> None:
        if now.status != before.status:
            _log(props, f"{now.name}: {now.status.name}")

    return poll_until(
        build,
        lambda b: api.get(b.name),
        lambda b: b.status in spec.TERMINAL,
        until,
        float(props["poll_interval_seconds"]),
        seen,
    )


def _failure(api: BuildApi, build: cloudbuild_v1.Build, props: dict[str, Any]) -> BuildError:
    """Names the build, its status and reason, the end of its log and the console link."""
    reason = build.failure_info.detail or build.status_detail or "no reason was reported"
    try:
        tail = api.log_tail(build)
        log = "\n".join(f"  {line}" for line in tail) if tail else "  (the build wrote no log lines)"
    except BuildError as exc:
        log = f"  (the log could not be read: {exc})"
    return BuildError(
        f"Image build {build.name} for {_id(props)} ended {build.status.name}: {reason}\n"
        f"End of the build log:\n{log}\nDetails and full log: {spec.console_url(build, props)}"
    )


class _NotYetGranted(BuildError):
    """A build that failed the way a builder whose new grants are not applied yet fails."""

    def __init__(self, error: BuildError, refusal: str) -> None:
        super().__init__(str(error))
        self.refusal = refusal


def grant_refusal(build: cloudbuild_v1.Build) -> str | None:
    """The refusal in a failed build that reads as its builder's grants not applied yet, else None."""
    detail = build.failure_info.detail or build.status_detail
    if build.status != spec.Status.FAILURE or build.failure_info.type_ not in GRANT_FAILURES:
        return None
    return detail if propagation.PERMISSION_NOT_YET.search(detail or "") else None


def _wait(api: BuildApi, build: cloudbuild_v1.Build, props: dict[str, Any]) -> cloudbuild_v1.Build:
    """Wait for a terminal status; raise unless it succeeded. A build past its deadline is cancelled first."""
    started = build.create_time.timestamp() if build.create_time else time.time()
    build = _poll(api, build, props, started + props["timeout_seconds"] + QUEUE_GRACE_SECONDS)
    if build.status not in spec.TERMINAL:
        _log(props, f"{build.name} outlived its timeout of {props['timeout_seconds']}s; cancelling it")
        api.cancel(build.name)
        build = _poll(api, build, props, time.time() + CANCEL_WAIT_SECONDS)
        raise BuildError(
            f"Image build {build.name} ran past timeout_seconds={props['timeout_seconds']} plus "
            f"{QUEUE_GRACE_SECONDS:.0f}s queueing grace and was cancelled (now {build.status.name}).\n"
            f"Details: {spec.console_url(build, props)}"
        )
    if build.status != spec.Status.SUCCESS:
        refusal = grant_refusal(build)
        failure = _failure(api, build, props)
        raise failure if refusal is None else _NotYetGranted(failure, refusal)
    return build


def _build(api: BuildApi, props: dict[str, Any], adopted: cloudbuild_v1.Build | None) -> cloudbuild_v1.Build:
    """Wait for the adopted build, or submit one; a build refused for the builder's new grants is submitted
    again after the next gap of dynamic/propagation.DELAYS, until IAM's documented worst case."""
    pending = [adopted] if adopted is not None else []

    def attempt() -> cloudbuild_v1.Build:
        build = pending.pop() if pending else None
        if build is None:
            build = api.create(spec.build_request(props))
            _log(props, f"started {build.name} ({build.status.name}): {spec.console_url(build, props)}")
        return _wait(api, build, props)

    return propagation.retry_until_seen(
        attempt,
        lambda exc: exc.refusal if isinstance(exc, _NotYetGranted) else None,
        f"Image build of {_id(props)}",
        WAITING_FOR,
        lambda line: _log(props, line),
    )


class ImageBuildProvider(SpecProvider):
    """Create (build and push, or find already pushed) / read / delete the trainer image."""

    spec = spec

    log_format = "image {image_name}:{tag}"
    # The uploaded context's generation matters only to the build that reads it: a pushed image stays what
    # it is when the same context is uploaded again, and state from before the pin needs no update.
    fixed_inputs = ("source_generation",)

    def create(self, props: dict[str, Any]) -> CreateResult:
        props = spec.with_defaults(props)
        api = BuildApi(props)
        digest = api.pushed_digest()
        if digest is not None:
            _log(props, f"already in the registry as {digest}; not rebuilding")
            return CreateResult(_id(props), _outputs(props, digest, None))
        build = api.find_live_build()
        if build is not None:
            _log(props, f"adopting {build.name} ({build.status.name}), started earlier for the same tag")
        build = _build(api, props, build)
        digest = spec.digest_of(build, spec.image_uris(props)[0])
        if digest is None:
            raise BuildError(
                f"Image build {build.name} succeeded but reports no digest for {spec.image_uris(props)[0]}; "
                f"check {spec.console_url(build, props)}"
            )
        _log(props, f"pushed {spec.image(props)}@{digest}")
        for line in (spec.builder_image(build), *spec.resolved_base_images(build)):
            _log(props, f"built with {line}")
        return CreateResult(_id(props), _outputs(props, digest, build))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = spec.with_defaults(props)
        digest = BuildApi(props).pushed_digest()
        if digest is None:
            # The tag is gone (the repository's cleanup policy, or by hand): the next `up` builds it again.
            return ReadResult("", {})
        outputs = {**props, **_outputs(props, digest, None)}
        outputs.update({k: props[k] for k in BUILD_OUTPUTS if k in props})
        return ReadResult(id_, outputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # Only poll_interval_seconds changes in place: the image stays what it was.
        props = spec.with_defaults(news)
        return UpdateResult({**olds, **{k: props[k] for k in spec.INPUTS if k in props}})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        # The pushed image stays: running jobs may still pull it, and the repository's cleanup policy
        # removes old versions. A finished create left no build in flight, so there is nothing to stop.
        return None
