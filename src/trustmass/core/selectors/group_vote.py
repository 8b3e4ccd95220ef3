"""The GQA group vote (paper spec §1.8): one kept set per KV head from its query heads' rows.

For KV head h with query heads G(h) at a shared position i, score_j = sum_{r in G(h)} P_r[i, j]
and A_vote is the top-s keys by that score (ties to the smaller index).  With group size 1 the
vote is the row's own top-mass set exactly.
"""

from __future__ import annotations

import numpy as np

from trustmass.core.operator import top_k


def group_vote(rows: np.ndarray, s: int) -> np.ndarray:
    """rows: (g, N) attention rows of one KV group at one position.  Returns A_vote ascending."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    return np.sort(top_k(rows.sum(axis=0), s))
