"""Work limits, not wall time, decide every certification outcome (issue 38): the same instance and
budget give the same certificate -- every field but the seconds -- alone and beside processes
spinning on every core, and wherever the safety net's clock is read."""

import os
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

from trustmass.certification import bnb
from trustmass.certification import misocp as cert
from trustmass.certification import runner as R
from trustmass.core.enumeration import pool_optimum
from trustmass.core.operator import Instance


def _instance(n: int = 300) -> Instance:
    """A diffuse row (d = 16; at N = 300 its certification needs about 5e8 bnb work units in all)."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(n, 0.3))
    return Instance.from_arrays(p, rng.standard_normal((n, 16)))


@contextmanager
def _spinning():
    """A busy loop on every core for the duration (ended by its own id)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(2, os.cpu_count() or 2))]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _outcome(row: dict) -> dict:
    """A certify_one row without its seconds (runner.TIMING_COLUMNS), arrays as lists."""
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in row.items() if k not in R.TIMING_COLUMNS}


def _fields(c: cert.Certificate) -> tuple:
    solves = [(r.tau, r.outcome, r.nodes, r.work, r.es_found, r.scip_status) for r in c.solves]
    return (c.status, c.es_cert, c.lower_bound, c.best.tolist(), c.improvement, solves)


@pytest.mark.parametrize(
    "settings",
    [
        R.CertificationSettings(certifier="bnb", bnb_work=50, isolate=False),
        R.CertificationSettings(certifier="paper", scip_lp_iterations=200, isolate=False),
        R.CertificationSettings(certifier="paper", scip_nodes=3, isolate=False),
    ],
    ids=["bnb", "paper-lp-iterations", "paper-nodes"],
)
def test_the_certificate_is_the_same_under_load(settings):
    """One instance certified with a budget alone and beside a busy loop on every core: the rows
    are equal in every column but the seconds (bitwise: == on floats and key lists)."""
    inst = _instance(300 if settings.certifier == "bnb" else 100)
    bnb.warm_up()
    quiet = R.certify_one(inst, 8, 12, settings)
    with _spinning():
        loaded = R.certify_one(inst, 8, 12, settings)
    assert _outcome(quiet) == _outcome(loaded)
    assert quiet["status"] in cert.STATUSES and quiet["status"] != cert.SAFETY_STOP
    assert quiet["work"] > 0
    # the budget was spent: where each solve stopped is the budget's, not the clock's
    assert "worklimit" in quiet["solve_outcomes"]


def test_where_the_clock_is_read_changes_nothing(monkeypatch):
    """The compiled search runs in chunks of CHUNK_WORK units between looks at the safety net's clock;
    a search chopped 64 times finer stops at the same place with the same answer."""
    inst = _instance()
    po = pool_optimum(inst, 8, 12)
    run = lambda: bnb.certify_bnb(inst, 8, po.kept, po.es_pool, work_limit=50_000_000)  # noqa: E731
    coarse = run()
    monkeypatch.setattr(bnb, "CHUNK_WORK", bnb.CHUNK_WORK // 64)
    fine = run()
    assert _fields(coarse) == _fields(fine)
    assert coarse.solves[-1].outcome == cert.WORKLIMIT and coarse.status in (cert.UNDECIDED, cert.IMPROVED)
    assert coarse.work <= 2 * 50_000_000 + coarse.solves[-1].work  # two probes' worth, one node over at most


def test_the_safety_net_is_its_own_status():
    """A probe stopped by the seconds limit: status safety_stop (not undecided), bounds still valid."""
    inst = _instance()
    po = pool_optimum(inst, 8, 12)
    c = bnb.certify_bnb(inst, 8, po.kept, po.es_pool, time_limit=1e-9, starts=0)
    assert c.status == cert.SAFETY_STOP and c.solves[-1].outcome == cert.TIMELIMIT
    assert c.lower_bound == 0.0 and c.es_cert <= po.es_pool


def test_table7_counts_the_safety_net_apart_from_undecided():
    import polars as pl

    from trustmass.report.frames import certification as F

    statuses = [cert.UNDECIDED, cert.SAFETY_STOP, cert.SAFETY_STOP]
    one = {"budget": [4] * 3, "es_pool": [1.0] * 3}
    man = pl.DataFrame(
        {"instance": [0, 1, 2], **one, "es_top": [1.2] * 3, "es_bal": [1.0] * 3, "D": [2.0] * 3}
        | {"c_hat": [0.1] * 3, "kappa_hat_bal": [1.0] * 3}
    )
    certified = pl.DataFrame(
        {"instance": [0, 1, 2], "status": statuses, "es_pool": [1.0] * 3, "es_cert": [1.0] * 3}
        | {"improvement": [0.0] * 3, "seconds": [0.1] * 3, "certifier": ["bnb"] * 3}
    )
    records = pl.DataFrame(
        {"model": ["m"], "corpus": ["c"], "doc": ["0"], "budget": [4], "c_hat": [0.1], "kappa_hat_bal": [1.0]}
    )
    t7 = F.table7(records, man, certified).row(0, named=True)
    assert (t7["n_undecided"], t7["n_safety_stop"], t7["n_unsolved"]) == (1, 2, 0)


def test_one_run_gives_the_budget_curve():
    """A search with a larger budget goes the same way and further: what a run at budget B decides and
    whether it closes the gap is read off one run at a larger budget (`bench.certify_compare.budget_profile`,
    the curve of benchmarks/certify.md)."""
    from trustmass.bench.certify_compare import DECIDED, budget_profile

    inst = _instance(160)
    po = pool_optimum(inst, 8, 4)
    big = bnb.certify_bnb(inst, 8, po.kept, po.es_pool, work_limit=400_000_000)
    profile = budget_profile(big, po.es_pool)
    assert profile["gap_work"] is not None  # the big run closes it: the comparison below means something
    for budget in (1_000_000, profile["gap_work"], profile["gap_work"] + 1):
        c = bnb.certify_bnb(inst, 8, po.kept, po.es_pool, work_limit=int(budget))
        closed = c.lower_bound >= (1 - 0.01) * c.es_cert * (1 - 1e-12)
        assert closed == (profile["gap_work"] < budget)  # a search stops once it has spent its budget
        read = closed or (profile["improved_work"] is not None and profile["improved_work"] < budget)
        assert (c.status in DECIDED) == read
