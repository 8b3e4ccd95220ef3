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

import numpy as np


@dataclass(frozen=True)
class HullProjection:
    weights: np.ndarray  # (n,) convex weights on the input points
    point: np.ndarray  # the projection sum_j weights_j v_j
    distance: float  # ||point - target||
    gap: float  # final Frank-Wolfe gap (certificate of optimality)
    iterations: int


def _affine_minimizer(X: np.ndarray) -> np.ndarray:
    """Coefficients alpha (sum 1) of the min-norm point of the affine hull of the rows of X."""
    if X.shape[0] == 1:
        return np.ones(1)
    base = X[0]
    dirs = (X[1:] - base).T  # d x (k-1)
    beta, *_ = np.linalg.lstsq(dirs, -base, rcond=None)
    return np.concatenate(([1.0 - beta.sum()], beta))


def project_onto_hull(points, target, tol: float = 1e-12, max_iter: int = 10_000) -> HullProjection:
    """Project ``target`` onto conv(rows of ``points``) exactly (Wolfe's algorithm)."""
    V = np.asarray(points, dtype=np.float64)
    if V.ndim == 1:
        V = V[:, None]
    t = np.asarray(target, dtype=np.float64).reshape(-1)
    X = V - t
    n = X.shape[0]
    norms2 = np.einsum("ij,ij->i", X, X)
    scale2 = max(float(norms2.max()), np.finfo(float).tiny)
    eps = 1e-14

    j0 = int(np.argmin(norms2))
    support = [j0]
    lam = np.ones(1)
    x = X[j0].copy()
    gap = np.inf
    it = 0
    for it in range(1, max_iter + 1):
        dots = X @ x
        j = int(np.argmin(dots))
        gap = float(x @ x - dots[j])
        if gap <= tol * scale2 or j in support:
            break
        support.append(j)
        lam = np.append(lam, 0.0)
        while True:  # minor cycle: move toward the affine minimiser of the support
            alpha = _affine_minimizer(X[support])
            if np.all(alpha > eps):
                lam = alpha
                break
            neg = alpha <= eps
            theta = np.min(lam[neg] / (lam[neg] - alpha[neg]))
            lam = lam + theta * (alpha - lam)
            keep = lam > eps
            keep[np.argmax(lam)] = True  # never empty the face
            support = [k for k, kept in zip(support, keep) if kept]
            lam = lam[keep]
            lam = lam / lam.sum()
        x = lam @ X[support]
    weights = np.zeros(n)
    weights[support] = lam
    point = weights @ V
    return HullProjection(
        weights=weights,
        point=point,
        distance=float(np.linalg.norm(weights @ X)),
        gap=max(gap, 0.0),
        iterations=it,
    )
