"""ImageBuildProvider: the Pulumi dynamic provider that builds and pushes the trainer image in Cloud Build.

Pickled by reference into every stack's state: keep this module's path and the class name as they are.
It holds no state; the API clients are made inside each method.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from google.cloud.devtools import cloudbuild_v1
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from infra.cloudbuild import spec
from infra.cloudbuild.builds import BuildApi
from infra.cloudbuild.errors import BuildError
from infra.dynamic.errors import plain_errors
from infra.dynamic.preview_inputs import changed_inputs

# Time on top of the build's own timeout for queueing before the provider gives up and cancels it.
QUEUE_GRACE_SECONDS = 1800.0
CANCEL_WAIT_SECONDS = 300.0
POLL_CAP_SECONDS = 60.0
POLL_GROWTH = 1.5


def _log(props: dict[str, Any], message: str) -> None:
    # The provider's stderr reaches the Pulumi CLI.
    print(f"[image {props['image_name']}:{props['tag']}] {message}", file=sys.stderr, flush=True)


def _id(props: dict[str, Any]) -> str:
    return f"{spec.image(props)}:{props['tag']}"


def _outputs(props: dict[str, Any], digest: str, build: cloudbuild_v1.Build | None) -> dict[str, Any]:
    """Inputs, the pushed digest and the build that pushed it (empty when the registry already had it)."""
    return {
        **{k: props[k] for k in spec.INPUTS if k in props},
        "digest": digest,
        "image_ref": f"{spec.image(props)}@{digest}",
        "build_name": build.name if build else "",
        "log_url": spec.console_url(build, props) if build else "",
    }


def _poll(
    api: BuildApi, build: cloudbuild_v1.Build, props: dict[str, Any], until: float
) -> cloudbuild_v1.Build:
    """Poll with backoff until the build is terminal or `until` passes; report status changes on stderr."""
    interval = float(props["poll_interval_seconds"])
    cap = max(interval, POLL_CAP_SECONDS)
    while build.status not in spec.TERMINAL and time.time() < until:
        time.sleep(min(interval, max(0.0, until - time.time())))
        interval = min(interval * POLL_GROWTH, cap)
        current = api.get(build.name)
        if current.status != build.status:
            _log(props, f"{current.name}: {current.status.name}")
        build = current
    return build


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
        raise _failure(api, build, props)
    return build


class ImageBuildProvider(ResourceProvider):
    """Create (build and push, or find already pushed) / read / delete the trainer image."""

    def configure(self, req: ConfigureRequest) -> None:
        # Only the dynamic-provider host calls configure; the image build is often its first resource.
        plain_errors()

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        props = spec.with_defaults(news)
        return CheckResult(props, [CheckFailure(prop, reason) for prop, reason in spec.validate(props)])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        olds, news = spec.with_defaults(olds), spec.with_defaults(news)
        changed = changed_inputs(olds, news, spec.INPUTS)
        replaces = [k for k in changed if k not in spec.IN_PLACE_INPUTS]
        return DiffResult(changes=bool(changed), replaces=replaces)

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
        else:
            build = api.create(spec.build_request(props))
            _log(props, f"started {build.name} ({build.status.name}): {spec.console_url(build, props)}")
        build = _wait(api, build, props)
        digest = spec.digest_of(build, spec.image_uris(props)[0])
        if digest is None:
            raise BuildError(
                f"Image build {build.name} succeeded but reports no digest for {spec.image_uris(props)[0]}; "
                f"check {spec.console_url(build, props)}"
            )
        _log(props, f"pushed {spec.image(props)}@{digest}")
        return CreateResult(_id(props), _outputs(props, digest, build))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        props = spec.with_defaults(props)
        digest = BuildApi(props).pushed_digest()
        if digest is None:
            # The tag is gone (the repository's cleanup policy, or by hand): the next `up` builds it again.
            return ReadResult("", {})
        outputs = {**props, **_outputs(props, digest, None)}
        outputs.update({k: props[k] for k in ("build_name", "log_url") if k in props})
        return ReadResult(id_, outputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # Only poll_interval_seconds changes in place: the image stays what it was.
        props = spec.with_defaults(news)
        return UpdateResult({**olds, **{k: props[k] for k in spec.INPUTS if k in props}})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        # The pushed image stays: running jobs may still pull it, and the repository's cleanup policy
        # removes old versions. A finished create left no build in flight, so there is nothing to stop.
        return None
