"""Workflow plumbing shared by every stage: config validation, provenance sidecars, rule glue,
process isolation."""
