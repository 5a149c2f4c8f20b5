"""Least-privilege rules for the stacks' IAM grants; plain Python shared by tests and the policy pack."""
