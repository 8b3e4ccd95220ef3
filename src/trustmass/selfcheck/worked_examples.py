"""The paper's worked examples recomputed by the library (spec §1.11).

The inputs and expected values below are the specification's test vectors (Ex 2.2, Ex A.2 and
Partition-reduction instances); everything under "computed" comes from the library.  The test
suite asserts the same vectors; `worked_examples()` packages them as a pipeline output so a run
shows, next to its results, that the operator it used reproduces the paper's exact values.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from trustmass.core.enumeration import exact_optimum_bruteforce, pool_optimum
from trustmass.core.operator import (
    Instance,
    closable_share,
    ef,
    es,
    es_squared_rational,
    mass_cap_bound,
    phi,
    radius,
    ratio_kappa,
    sigma,
    top_mass,
    variance_bound,
)
from trustmass.core.selectors import balancing

TOL = 1e-12


def _check(name: str, expected, computed, tol: float = TOL) -> dict:
    if isinstance(expected, (list, tuple)):
        ok = list(expected) == [int(x) for x in computed]
        computed = [int(x) for x in computed]
    else:
        ok = abs(float(expected) - float(computed)) <= tol * max(1.0, abs(float(expected)))
        expected, computed = float(expected), float(computed)
    return {"quantity": name, "expected": expected, "computed": computed, "ok": bool(ok)}


def example_2_2() -> list[dict]:
    """d = 1, v = (-1, 1, 5), p = (0.45, 0.45, 0.10), s = 2 (keys 0-based here)."""
    inst = Instance.from_arrays([0.45, 0.45, 0.10], [-1.0, 1.0, 5.0])
    s = 2
    top = top_mass(inst, s)
    opt, argmin = exact_optimum_bruteforce(inst, s)
    pooled = pool_optimum(inst, s, extra=1)
    bal = balancing(inst, s, pooled.pool)
    es_top = es(inst, top)
    return [
        _check("mu", 0.5, inst.mu[0]),
        _check("D", 4.5, radius(inst)),
        _check("sigma^2", 3.15, sigma(inst) ** 2),
        _check("es({1,2})", Fraction(1, 2), es(inst, [0, 1])),
        _check("es({1,3})", Fraction(9, 22), es(inst, [0, 2])),
        _check("es({2,3})", Fraction(27, 22), es(inst, [1, 2])),
        _check("ES(2)", Fraction(9, 22), opt),
        _check("argmin ES(2) (0-based)", [0, 2], argmin),
        _check("ES_pool(2), e = 1", Fraction(9, 22), pooled.es_pool),
        _check("EF(2) = ef({1,3})", 0.0, ef(inst, [0, 2])),
        _check("top-mass set (0-based)", [0, 1], top),
        _check("es(A*_2)", Fraction(1, 2), es_top),
        _check("kappa", Fraction(11, 9), ratio_kappa(es_top, opt, radius(inst))),
        _check("c", Fraction(2, 11), closable_share(es_top, opt, radius(inst))),
        _check("Phi", 0.45, phi(inst, s)),
        _check("2 D m_2", 0.9, mass_cap_bound(inst, s)),
        _check("variance bound", np.sqrt(0.1 / 0.9) * np.sqrt(3.15), variance_bound(inst, top)),
        _check("balancing swaps", 1, bal.swaps),
        _check("A_bal (0-based)", [0, 2], bal.kept),
    ]


def example_a_2() -> list[dict]:
    """d = 1, v = (0, 1, 2, 3), uniform p: es is neither sub- nor supermodular."""
    inst = Instance.from_arrays([0.25] * 4, [0.0, 1.0, 2.0, 3.0])
    cases = [
        ({2}, Fraction(1, 2)),
        ({0, 2}, Fraction(1, 2)),
        ({1, 2}, Fraction(0)),
        ({0, 1, 2}, Fraction(1, 2)),
        ({1}, Fraction(1, 2)),
        ({0, 1}, Fraction(1)),
        ({1, 3}, Fraction(1, 2)),
        ({0, 1, 3}, Fraction(1, 6)),
    ]
    return [_check(f"es({sorted(points)})", value, es(inst, sorted(points))) for points, value in cases]


def partition_instance(u) -> tuple[list[Fraction], list[list[int]], int]:
    """The ZeroES reduction: w = (u, 0...0) of length m = 2n, p_j = 1/m, v_j = w_j, s = m/2."""
    m = 2 * len(u)
    return [Fraction(1, m)] * m, [[int(x)] for x in list(u) + [0] * len(u)], m // 2


def partition_decision(u) -> bool:
    """Partition by dynamic programming over reachable subset sums."""
    total = sum(u)
    if total % 2:
        return False
    reachable = {0}
    for x in u:
        reachable |= {r + x for r in reachable}
    return total // 2 in reachable


def reduction_examples() -> list[dict]:
    """Exact rational ES(N/2) of the spec's reduction instances, by brute force."""
    out = []
    for u, expected in [
        ((3, 1, 1, 2, 2, 1), Fraction(0)),
        ((1, 1, 4), Fraction(1, 3)),
        ((1, 2, 3, 4, 5, 7), Fraction(0)),
    ]:
        p, v, s = partition_instance(u)
        inst = Instance.from_arrays([float(x) for x in p], np.array(v, dtype=float))
        _, argmin = exact_optimum_bruteforce(inst, s)
        exact = es_squared_rational(p, v, argmin)
        n = len(p)
        out.append(_check(f"ES(N/2)^2 for u={u} (exact rational)", expected**2, exact, tol=0.0))
        out.append(_check(f"Partition(u={u}) decided by DP", int(expected == 0), int(partition_decision(u)), tol=0.0))
        out.append(
            _check(
                f"gap: ES = 0 or ES >= 2/N^2, u={u}", 1, int(exact == 0 or exact >= Fraction(2, n * n) ** 2), tol=0.0
            )
        )
    return out


def free_weight_instances(
    seed: int = 0, n_keys: int = 8, dims: tuple[int, ...] = (1, 2, 3), per_dim: int = 3
) -> list[dict]:
    """EF(s) by brute force over every s-subset (free weights: the hull distance) on seeded random
    rows, for s = 1 .. d+1, with the row's sigma and D: the quantities of App A's EF(s) <= sigma/sqrt(s)
    <= D/sqrt(s) and EF(d+1) = 0 (Caratheodory)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 80]))
    out = []
    for d in dims:
        for _ in range(per_dim):
            inst = Instance.from_arrays(rng.dirichlet(np.ones(n_keys)), rng.normal(size=(n_keys, d)))
            for s in range(1, d + 2):
                best = min(ef(inst, list(kept)) for kept in itertools.combinations(range(n_keys), s))
                out.append({"N": n_keys, "d": d, "s": s, "sigma": sigma(inst), "D": radius(inst), "ef": float(best)})
    return out


def reduction_gaps() -> list[dict]:
    """ES(N/2) of the reduction instances whose Partition has no solution (ES > 0), with N."""
    out = []
    for u in ((1, 1, 4), (2, 3, 7), (1, 2, 4, 8)):
        p, v, s = partition_instance(u)
        inst = Instance.from_arrays([float(x) for x in p], np.array(v, dtype=float))
        _, argmin = exact_optimum_bruteforce(inst, s)
        exact = es_squared_rational(p, v, argmin)
        out.append({"u": list(u), "N": len(p), "es_squared": str(exact), "es": float(np.sqrt(float(exact)))})
    return out


def worked_examples(seed: int = 0) -> dict:
    """Every worked example, with expected vs computed values and an overall verdict, and the
    quantities of the theory claims computed on seeded instances (``theory``)."""
    sections = {"example_2_2": example_2_2(), "example_A_2": example_a_2(), "partition_reduction": reduction_examples()}
    return {
        "sections": sections,
        "n_checks": sum(len(v) for v in sections.values()),
        "all_ok": all(c["ok"] for v in sections.values() for c in v),
        "theory": {"free_weight": free_weight_instances(seed), "reduction_gaps": reduction_gaps()},
    }
