"""Pulumi state backend: a hardened, versioned GCS bucket and a Cloud KMS key for stack secrets."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

KEY_RING = "vertex-training-pulumi"
CRYPTO_KEY = "pulumi-secrets"
KEY_ROTATION = f"{90 * 24 * 3600}s"
NONCURRENT_STATE_DAYS = 90  # old checkpoints stay recoverable this long


@dataclass
class StateBackendArgs:
    project: str
    region: str
    bucket: str
    labels: dict[str, str]


class StateBackend(pulumi.ComponentResource):
    """Both are protected: losing either loses every stack's state or its secrets."""

    backend_url: pulumi.Output[str]
    secrets_provider: pulumi.Output[str]

    def __init__(self, name: str, args: StateBackendArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vertex-training:bootstrap:StateBackend", name, None, opts)
        kept = pulumi.ResourceOptions(parent=self, protect=True)
        self.bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            project=args.project,
            name=args.bucket,
            location=args.region,
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            versioning=gcp.storage.BucketVersioningArgs(enabled=True),
            lifecycle_rules=[
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                        days_since_noncurrent_time=NONCURRENT_STATE_DAYS, with_state="ARCHIVED"
                    ),
                )
            ],
            force_destroy=False,
            labels=args.labels,
            opts=kept,
        )
        ring = gcp.kms.KeyRing(
            f"{name}-keyring", project=args.project, name=KEY_RING, location=args.region, opts=kept
        )
        self.key = gcp.kms.CryptoKey(
            f"{name}-key",
            name=CRYPTO_KEY,
            key_ring=ring.id,
            purpose="ENCRYPT_DECRYPT",
            rotation_period=KEY_ROTATION,
            labels=args.labels,
            opts=kept,
        )
        self.backend_url = self.bucket.name.apply(lambda b: f"gs://{b}")
        self.secrets_provider = self.key.name.apply(
            lambda k: (
                f"gcpkms://projects/{args.project}/locations/{args.region}/keyRings/{KEY_RING}/cryptoKeys/{k}"
            )
        )
        self.register_outputs({"backend_url": self.backend_url, "secrets_provider": self.secrets_provider})
