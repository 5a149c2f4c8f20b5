"""CrossGuard policy pack: the least-privilege rules of tests/ci/test_least_privilege.py on `pulumi preview`.

Enable it with `pulumi preview --policy-pack policy` (README, "Least-privilege policy pack"). The rules live
in infra/least_privilege (plain Python, tested there); constructing the PolicyPack starts its server and
blocks, so nothing else happens here.
"""

import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyPack, StackValidationPolicy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: infra.least_privilege

from infra.least_privilege.declared import report_exceptions, validate_stack

PolicyPack(
    name="vertex-training-least-privilege",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        StackValidationPolicy(
            name="least-privilege-iam",
            description=(
                "Every granted role exists; custom-role permissions are real; no identity holds act-as, "
                "token or setIamPolicy power over accounts the stack does not own; no workload can start "
                "Vertex AI work."
            ),
            validate=validate_stack,
        ),
        StackValidationPolicy(
            name="least-privilege-residual-risk",
            description=(
                "Grants accepted as documented residual risk (docs/ci.md): shown on every preview, never "
                "passed silently."
            ),
            validate=report_exceptions,
            enforcement_level=EnforcementLevel.ADVISORY,
        ),
    ],
)
