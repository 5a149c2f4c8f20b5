"""Google-managed service agents the kill switch relies on, created before their first use.

Eventarc's agent is created lazily on first use and its role arrives minutes later, so a fresh project's
first Pub/Sub-triggered function fails with "Permission denied while using the Eventarc Service Agent ... it
may take a few minutes" (hashicorp/terraform-provider-google#14584, #25294; pulumi/pulumi-gcp#1290).
Generating the identities explicitly (`projects.ServiceIdentity`, serviceusage generateServiceIdentity; no
separate beta provider is needed: pulumi-gcp is built from the google-beta provider) and retrying the
first trigger's creation while the agent's role is still refused (components/propagation.py, on the
kill-switch function) makes the first `pulumi up` pass without a second try or a fixed wait. The stack
grants the agents no role:
Eventarc's role (roles/eventarc.serviceAgent, which Google grants "when you first create Eventarc resources",
https://cloud.google.com/eventarc/standard/docs/functions/roles-permissions, read 2026-11-25) carries
iam.serviceAccounts.actAs and getAccessToken, so a deploy identity allowed to grant it could mint tokens for
any account through it; the bootstrap, run once by an owner, grants it ahead of the first trigger. The same
page: Pub/Sub direct events need no Event Receiver role on the trigger's account; a Pub/Sub agent enabled
before 8 April 2021 needs Token Creator (granted on the trigger account, infra/components/killswitch.py).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children

EVENTARC = "eventarc.googleapis.com"
PUBSUB = "pubsub.googleapis.com"  # pushes the budget topic's messages to the trigger with OIDC tokens


class ServiceAgents(pulumi.ComponentResource):
    """`ready`: the agents' identities, for what needs them to exist first (their roles may still be
    propagating: the first user retries, components/propagation.py)."""

    def __init__(
        self, name: str, project: str, services: list[str], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vertex-training:stack:ServiceAgents", name, None, opts)
        child = children(self, opts)
        created: list[pulumi.Resource] = []
        for service in services:
            short = service.split(".")[0]
            created.append(
                gcp.projects.ServiceIdentity(f"{short}-agent", project=project, service=service, opts=child)
            )
        self.ready: list[pulumi.Resource] = created
        self.register_outputs({})
