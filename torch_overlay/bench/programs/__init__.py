"""Standalone programs the bench runs under a chosen torch (`PYTHONPATH=<tree> python FILE`)."""
