"""Stage: the paper's worked examples recomputed by the library."""
