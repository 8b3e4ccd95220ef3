"""Stage: ceiling records, one per (layer, head, sampled row, budget)."""
