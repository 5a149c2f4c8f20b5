"""A Google Cloud of fakes in which a test stack has everything `pulumi up` needs, and the caller's ADC.

Every fake is served on one localhost port (VERTEX_AI_EMULATOR_HOST), reached by the real client libraries;
the credentials are a real `authorized_user` ADC file, refreshed by google-auth against a fake token endpoint
(google-auth always refreshes user credentials at its own endpoint constant: the fixture points it there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google.oauth2.credentials
import pytest
import yaml

from infra.components.killswitch import PERMISSIONS as KILL_SWITCH_PERMISSIONS
from infra.components.killswitch import ROLE_ID
from infra.config import load_config
from infra.dynamic.endpoints import EMULATOR_ENV
from infra.preflight import demand
from infra.preflight.__main__ import main
from infra.preflight.permissions import BILLING_PERMISSIONS, PREFLIGHT_READS
from infra.preflight.run import project_needs, stack_accounts
from infra.stack import required_apis
from infra.vertex.cost.pricing import Catalog
from tests.fakes.caller import Caller
from tests.fakes.cloud_billing import FakeCloudBilling
from tests.fakes.iam_admin import FakeIamAdmin
from tests.fakes.oauth import FakeTokenEndpoint
from tests.fakes.quotas import FakeCloudQuotas
from tests.fakes.resource_manager import FakeProjects
from tests.fakes.service_usage import FakeServiceUsage
from tests.stack.conftest import stack_values

PROJECT = "preflight-test-1"
ACCOUNT = "0A1B2C-3D4E5F-6A7B8C"
STACK = "pf"
EMAIL = "dev@example.com"
# What reading (not `up`) needs besides the deploy permissions: the project, the services' states, the role.
READ_PERMISSIONS = tuple(PREFLIGHT_READS)


@dataclass
class Cloud:
    """The fakes, the caller, and where the test stack's file and the ADC file live."""

    root: Path
    caller: Caller
    projects: FakeProjects
    billing: FakeCloudBilling
    usage: FakeServiceUsage
    iam: FakeIamAdmin
    quotas: FakeCloudQuotas
    tokens: FakeTokenEndpoint
    adc: Path

    def write_stack(self, **overrides: Any) -> None:
        """Pulumi.pf.yaml: the dev stack's file with this project and account (and `overrides`), made
        ready in the fakes: permissions, billing, APIs, the kill-switch role, the stack's accounts with the
        caller's rights on each (as the bootstrap leaves them), 8 of every quota it counts."""
        values = stack_values("dev", gcpProject=PROJECT, billingAccount=ACCOUNT, **overrides)
        (self.root / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": values}))
        cfg = load_config(values, STACK)
        self.caller.grant(f"projects/{PROJECT}", [*project_needs(cfg), *READ_PERMISSIONS])
        self.caller.grant(f"billingAccounts/{ACCOUNT}", BILLING_PERMISSIONS)
        for account in stack_accounts(cfg):
            self.iam.add_account(PROJECT, account.account_id)
            self.caller.grant(account.name(PROJECT), account.needed)
        self.usage.enable(PROJECT, *required_apis(cfg))
        for job in demand.jobs(cfg):
            for shape in job.shapes:
                for need in shape.needs:
                    self.quotas.set_quota(PROJECT, need.quota_id, default=8)

    def preflight(self, *args: str) -> int:
        return main(["--stack", STACK, *args], root=self.root)


@pytest.fixture(autouse=True)
def catalog_read_again() -> Iterator[None]:
    """Preflight without credentials marks this process's catalog as not to be read: later tests read
    theirs again."""
    yield
    Catalog.forget()


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cloud]:
    caller = Caller()
    projects, billing = FakeProjects(caller), FakeCloudBilling(caller)
    usage, iam, quotas = FakeServiceUsage(caller), FakeIamAdmin(caller), FakeCloudQuotas()
    host = projects.start(billing.handler(), usage.handler(), iam.handler(), quotas.handler())
    tokens = FakeTokenEndpoint(EMAIL)
    monkeypatch.setattr(google.oauth2.credentials, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT", tokens.start())
    adc = tokens.write_adc(tmp_path / "adc.json")
    projects.add_project(PROJECT)
    billing.link(PROJECT, ACCOUNT)
    iam.add_role(PROJECT, ROLE_ID, KILL_SWITCH_PERMISSIONS)
    monkeypatch.setenv(EMULATOR_ENV, host)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    world = Cloud(tmp_path, caller, projects, billing, usage, iam, quotas, tokens, adc)
    world.write_stack()
    yield world
    projects.stop()
    tokens.stop()
