"""The example ids the committed stack files ship (Pulumi.{dev,prod,cassava}.yaml) and the docs show.

A cloud stack that still holds one is refused: the project would be somebody else's (or none), and the
billing account does not exist. tests/stack/test_config_errors.py keeps this list and the files in step.
"""

PROJECTS = frozenset({"my-training-dev", "my-training-prod", "my-training-cassava", "my-project"})
BILLING_ACCOUNTS = frozenset({"012345-6789AB-CDEF01"})
