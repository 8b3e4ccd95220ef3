"""Balancing ends where es is at the rounding level (core.selectors.balancing, "Termination in floating point").

The fixture is a real row: layer 0, query head 5, position 283 of the shuffled-text control of
Qwen2.5-Coder-0.5B on the French handbook (the CPU panel, document 0001; float32 masses and values as
captured).  Its top-256 keys hold all but ~1e-17 of the mass; under the workflow's pinned BLAS kernels the
descent without the rounding margin swapped back and forth for ever (20,000 swaps at s = 256), which held
the panel's ceiling job for hours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from trustmass.core import operator as op
from trustmass.core.enumeration import candidate_pool
from trustmass.core.selectors.balancing import balancing
from trustmass.plumbing.determinism import pinned

FIXTURE = Path(__file__).parent / "data" / "balancing_rounding_row.npz"
BUDGET, EXTRA = 256, 4


def _instance():
    data = np.load(FIXTURE)
    inst, _, _, _ = op.captured_instance(data["p"], data["v"])
    return inst


def _exact_es2(inst, kept) -> Fraction:
    """es(A)^2 in rational arithmetic: ||mu - m_A||^2 from the float64 instance, no rounding."""
    p = [Fraction(float(x)) for x in inst.p]
    v = inst.v
    d = v.shape[1]
    mu = [sum((p[j] * Fraction(float(v[j, c])) for j in range(len(p))), Fraction(0)) for c in range(d)]
    mass = sum((p[j] for j in kept), Fraction(0))
    total = Fraction(0)
    for c in range(d):
        m_c = sum((p[j] * Fraction(float(v[j, c])) for j in kept), Fraction(0)) / mass
        total += (mu[c] - m_c) ** 2
    return total


def test_the_rounding_level_row_is_what_the_fixture_says():
    inst = _instance()
    es_top = op.es(inst, op.top_mass(inst, BUDGET))
    assert es_top < 1e-15 * op.radius(inst), "the fixture's top-256 set no longer sits at the rounding level"


def test_every_accepted_swap_decreases_the_exact_error():
    inst = _instance()
    pool = candidate_pool(inst, BUDGET, EXTRA)
    final = balancing(inst, BUDGET, pool)
    assert final.swaps <= len(pool), final.swaps
    previous = _exact_es2(inst, op.top_mass(inst, BUDGET).tolist())
    for k in range(1, final.swaps + 1):
        kept = balancing(inst, BUDGET, pool, max_swaps=k).kept
        now = _exact_es2(inst, kept.tolist())
        assert now < previous, f"swap {k} did not decrease the exact es"
        previous = now


@pytest.mark.parametrize("budget", [64, 128, 256])
def test_the_descent_ends_under_the_workflow_s_pinned_kernels(tmp_path, budget):
    # The pinned BLAS kernels are chosen when numpy loads, so the check runs in a fresh interpreter.
    code = (
        "import json, sys, numpy as np\n"
        "from trustmass.core import operator as op\n"
        "from trustmass.core.enumeration import candidate_pool\n"
        "from trustmass.core.selectors.balancing import balancing\n"
        f"d = np.load({str(FIXTURE)!r}); inst = op.captured_instance(d['p'], d['v'])[0]\n"
        f"b = balancing(inst, {budget}, candidate_pool(inst, {budget}, {EXTRA}), max_swaps=2000)\n"
        f"print(json.dumps({{'swaps': b.swaps, 'es': b.es, 'es_top': op.es(inst, op.top_mass(inst, {budget}))}}))\n"
    )
    env = {**os.environ, **pinned()}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["swaps"] < 50, f"balancing at s={budget} ran {out['swaps']} swaps: the descent does not end"


@pytest.mark.parametrize("budget", [64, 128, 256])
def test_the_batched_descent_ends_and_keeps_the_core_s_set(budget):
    import torch

    from trustmass.loss.balancing import balancing_mask
    from trustmass.loss.evidence import LayerRows

    data = np.load(FIXTURE)
    n, d = data["v"].shape
    rows = LayerRows(p=data["p"][None, None, :], positions=[[n - 1]], keys=np.zeros((1, n, d)), values=data["v"][None])
    kept, swaps = balancing_mask(rows, budget, EXTRA)
    inst = _instance()
    core = balancing(inst, budget, candidate_pool(inst, budget, EXTRA))
    assert int(swaps[0]) == core.swaps
    assert torch.flatten(kept[0].nonzero()).tolist() == core.kept.tolist()
