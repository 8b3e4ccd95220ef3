"""A crash in native code ends one isolated call, not the job (trustmass.plumbing.isolation)."""

import faulthandler
import os
import signal
import time

import numpy as np
import polars as pl
from unit.instances import random_instance
from unit.test_certification import tiny_capture  # noqa: F401 -- the shared fixture

from trustmass.certification import manifest as M
from trustmass.certification import runner as R
from trustmass.certification.misocp import SAFETY_STOP, UNSOLVED
from trustmass.plumbing.isolation import CRASHED, RAISED, TIMEOUT, isolated_call


def _segfault():
    faulthandler.disable()  # a deliberate crash: no traceback dump (pytest's, inherited by xdist workers' children)
    os.kill(os.getpid(), signal.SIGSEGV)


def _abort():
    faulthandler.disable()
    os.abort()


def _boom(x):
    raise ValueError(f"bad {x}")


def _sleep(seconds):
    time.sleep(seconds)
    return "late"


def test_value_comes_back():
    out = isolated_call(np.add, (np.arange(3), 1))
    assert out.ok and out.value.tolist() == [1, 2, 3]


def test_segfault_and_abort_are_crashes():
    out = isolated_call(_segfault)
    assert not out.ok and out.reason == CRASHED and "SIGSEGV" in out.message
    out = isolated_call(_abort)
    assert not out.ok and out.reason == CRASHED and "SIGABRT" in out.message


def test_exception_is_reported_with_its_traceback():
    out = isolated_call(_boom, (7,))
    assert not out.ok and out.reason == RAISED and "ValueError: bad 7" in out.message


def test_guard_kills_a_hung_child():
    start = time.perf_counter()
    out = isolated_call(_sleep, (30,), timeout_s=0.5)
    assert not out.ok and out.reason == TIMEOUT and time.perf_counter() - start < 10


def test_a_solver_segfault_is_an_unsolved_row(tiny_capture, monkeypatch):  # noqa: F811
    """The certification stage records a crashed SCIP as `unsolved`, and the other rows survive."""
    path, records = tiny_capture
    man = M.manifest(records, per_stratum=1, seed=0, budgets=(2, 4), n_shards=2, primary_docs=None)
    part = man.filter(pl.col("decile") < 2)
    victim = int(part["instance"][0])
    real = R.certify

    def crashing_certify(inst, s, *args, **kwargs):
        if s == int(part["budget"][0]) and inst.n_keys == crashing_certify.n_keys:
            _segfault()
        return real(inst, s, *args, **kwargs)

    first = part.row(0, named=True)
    inst, _ = R.load_instance(path, first["layer"], first["head"], first["kv_head"], first["query_pos"])
    crashing_certify.n_keys = inst.n_keys
    monkeypatch.setattr(R, "certify", crashing_certify)
    out = R.certify_rows(part, lambda m, c, d: path, R.CertificationSettings(time_limit_s=1.0, memory_limit_mb=1000.0))
    assert out.height == part.height
    crashed = out.filter(pl.col("instance") == victim).row(0, named=True)
    assert crashed["status"] == UNSOLVED and "SIGSEGV" in crashed["message"]
    assert out.filter(pl.col("status") != UNSOLVED).height >= 1


def test_guard_expiry_is_the_safety_net_not_undecided(monkeypatch):
    monkeypatch.setattr(R.CertificationSettings, "guard_s", property(lambda self: 0.3))
    monkeypatch.setattr(R, "certify", lambda *a, **k: time.sleep(30))
    row = R.certify_isolated(random_instance(0, n=12, d=4), 4, 2, R.CertificationSettings())
    assert row["status"] == SAFETY_STOP and row["message"].startswith("timeout")


def test_a_crashing_solve_is_an_error_solve_and_an_unsolved_instance(monkeypatch):
    """certify(isolate_solves=True): one solve dying in native code ends that solve only."""
    from trustmass.certification import misocp as cert

    inst = random_instance(4, n=14, d=3)
    monkeypatch.setattr(cert, "solve_feasibility", lambda *a, **k: _segfault())
    c = cert.certify(inst, 4, time_limit=5, isolate_solves=True)
    assert c.status == UNSOLVED and [r.outcome for r in c.solves] == [cert.ERROR]
    assert "SIGSEGV" in c.solves[0].message and c.es_cert == c.es_pool
