"""`python -m infra.plan --stack NAME [--json]`: what `pulumi up` would create and what its jobs may cost,
offline (no credentials, no Pulumi CLI, nothing read from Google Cloud)."""
