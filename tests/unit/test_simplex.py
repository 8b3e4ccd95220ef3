"""Exact projection onto a convex hull, against a face-enumeration oracle."""

from itertools import combinations

import numpy as np
import pytest

from trustmass.core.simplex import project_onto_hull


def hull_distance_oracle(points: np.ndarray, target: np.ndarray) -> float:
    """min over faces with <= d+1 vertices of the affine projection that lands inside the face."""
    n, d = points.shape
    best = np.inf
    for size in range(1, min(n, d + 1) + 1):
        for face in combinations(range(n), size):
            X = points[list(face)] - target
            if size == 1:
                alpha = np.ones(1)
            else:
                beta, *_ = np.linalg.lstsq((X[1:] - X[0]).T, -X[0], rcond=None)
                alpha = np.concatenate(([1 - beta.sum()], beta))
            if np.all(alpha >= -1e-10):
                best = min(best, float(np.linalg.norm(alpha @ X)))
    return best


@pytest.mark.parametrize("seed", range(30))
def test_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.choice([1, 2, 3, 8]))
    n = int(rng.integers(1, 9))
    points = rng.standard_normal((n, d))
    target = rng.standard_normal(d) * rng.choice([0.1, 1.0, 3.0])
    proj = project_onto_hull(points, target)
    assert proj.distance == pytest.approx(hull_distance_oracle(points, target), rel=1e-9, abs=1e-12)
    assert proj.weights.min() >= 0 and proj.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(proj.weights @ points, proj.point)
    assert proj.gap <= 1e-12 * np.max(np.sum((points - target) ** 2, axis=1)) + 1e-300


def test_target_inside_hull_is_distance_zero():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    proj = project_onto_hull(points, np.array([0.2, 0.3]))
    assert proj.distance <= 1e-15
    assert np.allclose(proj.weights, [0.5, 0.2, 0.3], atol=1e-12)


def test_duplicate_points_and_segment():
    points = np.array([[0.0], [0.0], [2.0], [2.0]])
    assert project_onto_hull(points, np.array([3.0])).distance == pytest.approx(1.0)
    assert project_onto_hull(points, np.array([1.5])).distance <= 1e-15


def test_single_point():
    proj = project_onto_hull(np.array([[1.0, 2.0]]), np.array([4.0, 6.0]))
    assert proj.distance == pytest.approx(5.0)
