"""Formats of Google Cloud identifiers that both Pulumi projects (main and bootstrap) validate."""

import re

PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
BILLING_ACCOUNT = re.compile(r"^[0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6}$")
REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
# A zone is its region and a letter: us-central1-a is in us-central1.
ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
