"""Formats of Google Cloud identifiers that both Pulumi projects (main and bootstrap) validate."""

import re

PROJECT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
BILLING_ACCOUNT = re.compile(r"^[0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6}$")
REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
