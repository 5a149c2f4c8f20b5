"""`python -m infra.leftovers --stack NAME`: what of a stack still bills after `pulumi destroy`, and where.

Lists what carries the stack's labels (infra/labels.py) or names: live Vertex AI jobs of every kind in every
region the stack names (or every Vertex AI region), the stack's buckets and repository with their size and
monthly price, its TensorBoards, Model Registry models and kill-switch function, and the Google-created bucket
docs/stack.md names under "Ending at zero". `--cancel` cancels the live jobs; nothing here deletes storage.
"""
