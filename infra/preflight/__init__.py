"""`python -m infra.preflight --stack NAME [--json]`: read-only checks, with the caller's Application Default
Credentials, of everything a cloud stack's first `pulumi up` needs; one line per item with its fix."""
