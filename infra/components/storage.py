"""The training bucket: data, checkpoints, models and logs, in the job's region, private and self-cleaning."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from infra.components.options import children

# Prefixes the stack writes under; lifecycle rules key on them.
TMP_PREFIX = "tmp/"
CHECKPOINT_PREFIX = "checkpoints/"
TMP_RETENTION_DAYS = 1
CHECKPOINT_RETENTION_DAYS = 14


def lifecycle_rules() -> list[gcp.storage.BucketLifecycleRuleArgsDict]:
    """Temporary data goes after a day, checkpoints (only needed to resume a job) after two weeks."""
    return [
        {
            "action": {"type": "Delete"},
            "condition": {"age": TMP_RETENTION_DAYS, "matches_prefixes": [TMP_PREFIX]},
        },
        {
            "action": {"type": "Delete"},
            "condition": {"age": CHECKPOINT_RETENTION_DAYS, "matches_prefixes": [CHECKPOINT_PREFIX]},
        },
        {"action": {"type": "AbortIncompleteMultipartUpload"}, "condition": {"age": 1}},
    ]


class TrainingBucket(pulumi.ComponentResource):
    """A uniform-access bucket with public access prevention; protected when the stack says so."""

    def __init__(
        self,
        name: str,
        *,
        project: str,
        bucket_name: str,
        region: str,
        labels: dict[str, str],
        force_destroy: bool,
        protect: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("vertex-training:stack:Storage", name, None, opts)
        self.bucket = gcp.storage.Bucket(
            "bucket",
            project=project,
            name=bucket_name,
            # Same region as the jobs: no cross-region egress, and Vertex reads it fastest.
            location=region.upper(),
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            force_destroy=force_destroy,
            lifecycle_rules=lifecycle_rules(),
            # A throwaway stack keeps no soft-deleted copies, so `pulumi destroy` leaves nothing that bills;
            # a kept stack retains the default seven days of recovery.
            soft_delete_policy={"retention_duration_seconds": 0} if force_destroy else None,
            labels=labels,
            opts=children(self, opts, protect=protect),
        )
        self.name = self.bucket.name
        self.url = self.bucket.url
        self.register_outputs({"name": self.name, "url": self.url})
