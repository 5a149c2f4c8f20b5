"""The quota item of each job: its shapes walked as `up` walks them, against Cloud Quotas' values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from google.api_core import exceptions as gexc
from google.cloud import cloudquotas_v1

from infra.preflight.caller import Caller
from infra.preflight.checks import api_error
from infra.preflight.demand import JobDemand, ShapeDemand
from infra.preflight.results import Result, cannot_tell, missing, note, ok
from infra.vertex.capacity.quotas import SERVICE as VERTEX_SERVICE
from infra.vertex.capacity.quotas import QuotaNeed, quota_info, quota_page, region_value, request_command


class QuotaUnreadable(Exception):
    """A quota value that could not be read, with the reason."""


class QuotaValues:
    """Vertex AI quota values per region, read once per quota id through Cloud Quotas."""

    def __init__(self, client: cloudquotas_v1.CloudQuotasClient, project_id: str) -> None:
        self.client = client
        self.project_id = project_id
        self._infos: dict[str, cloudquotas_v1.QuotaInfo | QuotaUnreadable] = {}

    def __call__(self, quota_id: str, region: str) -> int:
        if quota_id not in self._infos:
            try:
                self._infos[quota_id] = quota_info(self.client, self.project_id, quota_id)
            except gexc.GoogleAPIError as exc:
                self._infos[quota_id] = QuotaUnreadable(api_error(exc))
        found = self._infos[quota_id]
        if isinstance(found, QuotaUnreadable):
            raise found
        value = region_value(found, region)
        if value is None:
            raise QuotaUnreadable(f"Cloud Quotas publishes no value of it for {region}")
        return value


# How one shape stands: it fits; its quota is short (`up` skips it); short on a quota no Vertex source ties
# to it (Spot: `up` submits it anyway); or unknown.
FITS, SHORT, ADVISORY, UNKNOWN = "fits", "short", "advisory", "unknown"


@dataclass(frozen=True)
class Verdict:
    """How one shape stands (FITS, SHORT, ADVISORY or UNKNOWN), why, and the quotas it is short of."""

    kind: str
    why: str
    short: tuple[QuotaNeed, ...] = ()


def shape_verdict(shape: ShapeDemand, value: Callable[[str, str], int]) -> Verdict:
    """How `shape` stands against every quota it holds, in its region."""
    held: list[str] = []
    short: list[tuple[QuotaNeed, str]] = []
    advisory: list[tuple[QuotaNeed, str]] = []
    for need in shape.needs:
        try:
            found = value(need.quota_id, shape.region)
        except QuotaUnreadable as exc:
            return Verdict(UNKNOWN, f"{need.quota_id} in {shape.region} unreadable ({exc})", (need,))
        if 0 <= found < need.count:
            why = f"{need.quota_id} in {shape.region} is {found}, it needs {need.count} {need.what}"
            (advisory if need.advisory else short).append((need, why))
        else:
            held.append(f"{need.quota_id} {'unlimited' if found < 0 else found} >= {need.count}")
    for kind, lacking in ((SHORT, short), (ADVISORY, advisory)):
        if lacking:
            return Verdict(kind, "; ".join(why for _, why in lacking), tuple(need for need, _ in lacking))
    return Verdict(FITS, "; ".join(held) or "no quota counts its machines")


def job_quota(job: JobDemand, value: Callable[[str, str], int], caller: Caller, project_id: str) -> Result:
    """Walks the job's shapes as `up` does: a short shape is skipped, the first other one decides; the
    shapes after it are reported too."""
    item = f"quota, {job.name}"
    verdicts = [(shape, shape_verdict(shape, value)) for shape in job.shapes]
    index = next((i for i, (_, v) in enumerate(verdicts) if v.kind != SHORT), len(verdicts))
    skipped = [f"{shape.label}: {v.why}" for shape, v in verdicts[:index]]
    if index == len(verdicts):
        first, verdict = verdicts[0]
        fix = _request(first, verdict, caller, project_id)
        return missing(item, f"no shape has quota: {'; '.join(skipped)}", fix)
    shape, verdict = verdicts[index]
    before = f" ({'; '.join(skipped)}: `up` skips {'it' if len(skipped) == 1 else 'them'})" if skipped else ""
    after = [f"{later.label}: {v.kind}" for later, v in verdicts[index + 1 :]]
    later = f"; then {', '.join(after)}" if after else ""
    advice = {
        FITS: "",
        UNKNOWN: "; reading quotas needs cloudquotas.quotas.get (roles/cloudquotas.viewer) and the "
        "Cloud Quotas API on",
        ADVISORY: "; no Vertex source says Spot training draws on it (Compute Engine advises it for Spot "
        "VMs): `up` submits the job, which may queue or be refused",
    }[verdict.kind]
    detail = f"{shape.label} in {shape.region}: {verdict.why}{advice}{before}{later}"
    if verdict.kind == FITS:
        return ok(item, detail)
    if verdict.kind == UNKNOWN:
        [need] = verdict.short
        read = f"gcloud beta quotas info describe {need.quota_id} --service={VERTEX_SERVICE}"
        return cannot_tell(item, detail, f"{read} --project={project_id}")
    # ADVISORY: `up` would submit the job, so this does not hold preflight back.
    return note(item, detail, _request(shape, verdict, caller, project_id))


def _request(shape: ShapeDemand, verdict: Verdict, caller: Caller, project_id: str) -> str:
    """Commands that request the quotas `shape` is short of (new projects start at 0; approval takes time)."""
    email = caller.member.split(":", 1)[1] if caller.member and caller.member.startswith("user:") else "<you>"
    commands = [request_command(need, project_id, shape.region, email) for need in verdict.short]
    return f"{' ; '.join(commands)} (or in the console: {quota_page(project_id)})"
