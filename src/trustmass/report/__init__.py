"""The reporting layer: statistics frames, tables, figures and the claims report."""
