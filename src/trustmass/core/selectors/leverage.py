"""The ridge-leverage selector (paper spec §1.6): keys with the largest ridge leverage.

score_j = k_j^T (K^T K + lam I)^{-1} k_j over the row's keys K (N x d_k, post-RoPE as cached),
with lam = ridge * tr(K^T K) / d_k (the paper gives no lam; ridge = 1e-3 is our default).
"""

from __future__ import annotations

import numpy as np

from trustmass.core.operator import top_k


def ridge_leverage_scores(keys: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    K = np.asarray(keys, dtype=np.float64)
    gram = K.T @ K
    lam = ridge * np.trace(gram) / K.shape[1]
    solved = np.linalg.solve(gram + lam * np.eye(K.shape[1]), K.T)  # (d_k, N)
    return np.einsum("ij,ji->i", K, solved)


def leverage(keys: np.ndarray, s: int, ridge: float = 1e-3, candidates: np.ndarray | None = None) -> np.ndarray:
    """A^lev_s (key indices ascending); `candidates` restricts the choice, scores use all keys."""
    return top_leverage(ridge_leverage_scores(keys, ridge), s, candidates)


def top_leverage(scores: np.ndarray, s: int, candidates: np.ndarray | None = None) -> np.ndarray:
    """A^lev_s from precomputed scores (they do not depend on the budget: compute once per row)."""
    exclude = None
    if candidates is not None:
        exclude = np.ones(scores.shape[0], dtype=bool)
        exclude[np.asarray(candidates, dtype=np.int64)] = False
    return np.sort(top_k(scores, s, exclude=exclude))
