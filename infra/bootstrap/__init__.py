"""Bootstrap project: keyless GitHub Actions identities and the Pulumi state backend for vertex-training."""
