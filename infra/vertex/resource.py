"""The training job resource's public import path (README, user programs): `from infra.vertex.resource import
CustomJob, CustomJobArgs, WorkerPool`. It lives in infra/vertex/custom_job/resource.py."""

from infra.vertex.custom_job.resource import RESOURCE_TYPE, CustomJob, CustomJobArgs, WorkerPool

__all__ = ["RESOURCE_TYPE", "CustomJob", "CustomJobArgs", "WorkerPool"]
