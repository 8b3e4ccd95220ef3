"""Exact Euclidean projection of a point onto the convex hull of a few points (a simplex QP).

ef(A) = dist(mu, conv{v_j : j in A}) = min_{lam in simplex} ||sum_j lam_j v_j - mu||.

We use Wolfe's minimum-norm-point algorithm (Wolfe 1976) on the shifted points x_j = v_j - mu.
It is an active-set method that is *finite*: each minor cycle solves the affine minimiser of the
current face exactly (least squares), so at termination the answer is the exact projection onto
the optimal face up to float64 round-off -- not an iterative approximation.  Termination is
certified by the Frank-Wolfe gap  <x, x> - min_j <x, x_j>  <= tol * max_j ||x_j||^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np


@dataclass(frozen=True)
class HullProjection:
    weights: np.ndarray  # (n,) convex weights on the input points
    point: np.ndarray  # the projection sum_j weights_j v_j
    distance: float  # ||point - target||
    gap: float  # final Frank-Wolfe gap (certificate of optimality)
    iterations: int


@numba.njit(cache=True, nogil=True)
def _affine_minimizer(X, face):  # pragma: no cover (compiled)
    """Coefficients alpha (sum 1) of the min-norm point of the affine hull of the rows X[face]."""
    k = face.shape[0]
    alpha = np.ones(k)
    if k == 1:
        return alpha
    base = X[face[0]]
    dirs = np.empty((X.shape[1], k - 1))
    for c in range(1, k):
        dirs[:, c - 1] = X[face[c]] - base
    rcond = np.finfo(np.float64).eps * max(dirs.shape[0], dirs.shape[1])  # numpy's rcond=None
    beta = np.linalg.lstsq(dirs, -base, rcond)[0]
    alpha[0] = 1.0 - beta.sum()
    alpha[1:] = beta
    return alpha


@numba.njit(cache=True, nogil=True)
def _wolfe(X, tol, max_iter):  # pragma: no cover (compiled)
    """Wolfe's iterations on the shifted points X: (support, its weights, final gap, iterations).

    Compiled because the ceiling runs it on every row at every enumerated budget, where the
    interpreter's cost per minor cycle (a least-squares solve on a few dozen points) dominates.
    """
    n = X.shape[0]
    norms2 = np.empty(n)
    for i in range(n):
        norms2[i] = X[i] @ X[i]
    scale2 = max(norms2.max(), np.finfo(np.float64).tiny)
    eps = 1e-14
    support = np.empty(n, dtype=np.int64)
    lam = np.empty(n)
    support[0] = np.argmin(norms2)
    lam[0] = 1.0
    k = 1
    x = X[support[0]].copy()
    gap = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        dots = X @ x
        j = np.argmin(dots)
        gap = x @ x - dots[j]
        if gap <= tol * scale2 or np.any(support[:k] == j):
            break
        support[k] = j
        lam[k] = 0.0
        k += 1
        while True:  # minor cycle: move toward the affine minimiser of the support
            alpha = _affine_minimizer(X, support[:k])
            if np.all(alpha > eps):
                lam[:k] = alpha
                break
            theta = np.inf
            for c in range(k):
                if alpha[c] <= eps:
                    theta = min(theta, lam[c] / (lam[c] - alpha[c]))
            for c in range(k):
                lam[c] = lam[c] + theta * (alpha[c] - lam[c])
            top = np.argmax(lam[:k])  # never empty the face
            kept = 0
            for c in range(k):
                if lam[c] > eps or c == top:
                    support[kept] = support[c]
                    lam[kept] = lam[c]
                    kept += 1
            k = kept
            lam[:k] = lam[:k] / lam[:k].sum()
        x = lam[:k] @ X[support[:k]]
    return support[:k].copy(), lam[:k].copy(), gap, it


def project_onto_hull(points, target, tol: float = 1e-12, max_iter: int = 10_000) -> HullProjection:
    """Project ``target`` onto conv(rows of ``points``) exactly (Wolfe's algorithm)."""
    V = np.asarray(points, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    t = np.asarray(target, dtype=np.float64).reshape(-1)
    X = np.ascontiguousarray(V - t)
    support, lam, gap, it = _wolfe(X, float(tol), int(max_iter))
    weights = np.zeros(X.shape[0])
    weights[support] = lam
    point = weights @ V
    return HullProjection(
        weights=weights,
        point=point,
        distance=float(np.linalg.norm(weights @ X)),
        gap=max(gap, 0.0),
        iterations=it,
    )
