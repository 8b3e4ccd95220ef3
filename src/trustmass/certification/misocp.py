"""MISOCP certification of the pool optimum ES_pool over the full key set (paper spec §3.3-3.4).

For a kept-set indicator z in {0,1}^N with sum z = s, Lemma 2.1 gives

    es(A) <= tau   <=>   || W z ||_2 <= tau * p^T z,        W = [w_1 ... w_N],  w_j = p_j (v_j - mu),

both sides affine in z: a mixed-integer second-order-cone feasibility program MISOCP(tau).  It is
solved with SCIP (PySCIPOpt) as

    sum_j z_j = s,   y = W~ z   (d linear equalities),   t = tau~ * p^T z,   sqrt(sum_k y_k^2) <= t,

with W~ = W / c and tau~ = tau / c (homogeneous scaling, tau itself unchanged).  The spec suggests
c = max_j ||w_j||; we use c = ||g_{A0}|| = ||W z0|| (the incumbent's residual, when nonzero), which
is the same kind of homogeneous scaling but puts the cone at the incumbent on unit scale, so SCIP's
absolute feasibility tolerance (1e-9) is a *relative* tolerance on tau.  Float64 es of every
returned subset is recomputed with `trustmass.core.operator.es`; the solver's values are never used.

Near-zero masses and the mass-floor split.  SCIP's tolerances are absolute (epsilon and feastol
1e-9) while the cone is homogeneous in the kept mass.  Keys whose mass is below about 1e-9 of the
largest (real rows at N ~ 4,096 have masses down to 1e-15) carry w_j and p_j that SCIP reads as 0,
so a kept set made of them satisfies "0 <= 0" and SCIP returns it as feasible (its float64 es is
x4 to x200 tau: outcome `numerical`, never trusted).  `certify` therefore splits the kept sets at a
mass floor phi = MASS_FLOOR_REL * p(z0):

* a set with p(A) < phi holds only keys with p_j < phi, so m_A lies in the convex hull of their
  values and es(A) >= dist(mu, conv{v_j : p_j < phi}) =: B_low (`low_mass_bound`, Wolfe's projection
  read through a separating hyperplane, so the bound is valid whatever the iteration reached);
* the sets with p(A) >= phi are searched by MISOCP(tau) with the extra constraint p^T z >= phi, where
  the cone's right side is at least ~phi/p(z0) in the scaled units and SCIP's absolute tolerance is
  a relative one of about 1e-9 * p(z0) / phi = 1e-6.

A probe at tau uses the floor only where it is sound, B_low > tau (then "infeasible" proves ES > tau
over all keys); elsewhere it runs the plain program.  On real N ~ 4,096 rows B_low exceeded ES_pool
in about half of the (row, budget) pairs tried (sharper heads); diffuse rows keep the plain program."""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from trustmass.core.operator import Instance, es, is_zero, radius
from trustmass.core.simplex import project_onto_hull

#: status codes (spec §3.4)
CONFIRMED_OPTIMAL = "confirmed_optimal"
IMPROVED = "improved"
WITHIN_1PCT = "within_1pct"
UNDECIDED = "undecided"  # the work budget ran out before the question was answered
UNSOLVED = "unsolved"
#: the seconds safety net stopped a solve or probe: a result that depends on the machine's speed, kept
#: apart from undecided (which depends on the inputs and the budget only)
SAFETY_STOP = "safety_stop"
STATUSES = (CONFIRMED_OPTIMAL, IMPROVED, WITHIN_1PCT, UNDECIDED, UNSOLVED, SAFETY_STOP)

#: per-solve outcomes
FEASIBLE = "feasible"
INFEASIBLE = "infeasible"
#: the solve's work budget (SCIP: nodes / LP iterations; bnb: work units) ran out: deterministic
WORKLIMIT = "worklimit"
#: the seconds safety net stopped the solve: depends on the clock
TIMELIMIT = "timelimit"
MEMLIMIT = "memlimit"
ERROR = "error"
#: SCIP reported a solution whose float64 es exceeds tau beyond tolerance (not trusted)
NUMERICAL = "numerical"

#: paper protocol defaults: the work budget per solve (SCIP nodes, LP iterations; None: no limit) and
#: the seconds safety net (the paper's own 120 s limit; config.yaml states their measured equivalence)
DEFAULT_TIME_LIMIT = 120.0
DEFAULT_NODE_LIMIT: int | None = None
DEFAULT_LP_ITERATION_LIMIT: int | None = None
FIRST_PROBE = 1.0 - 1e-6
MATERIAL = 0.99
DEFAULT_REL_GAP = 1e-3
DEFAULT_FEASTOL = 1e-9
#: a returned subset counts as feasible if es(z) <= tau * (1 + ACCEPT_REL)
ACCEPT_REL = 1e-7
#: the mass floor of the split (module docstring), relative to the incumbent's kept mass
MASS_FLOOR_REL = 1e-3
#: slack between the two sides of the split: SCIP reads coefficients below its epsilon as 0, so the
#: hull bound covers every set with p(A) < floor (1 + s FLOOR_EPS), the program the rest
FLOOR_EPS = 1e-9


@dataclass(frozen=True)
class SolveRecord:
    tau: float
    outcome: str  # feasible / infeasible / worklimit / timelimit / memlimit / error / numerical
    seconds: float  # wall seconds for build + solve
    nodes: int
    es_found: float | None  # float64 es of the returned subset (feasible / numerical)
    warm_start_accepted: bool
    scip_status: str
    message: str = ""
    mass_floor: float = 0.0  # the program's p^T z >= mass_floor (0: plain program)
    work: int = 0  # the budget's counter: SCIP's LP iterations, bnb's work units


@dataclass(frozen=True)
class Certificate:
    status: str
    es_cert: float  # upper bound on ES(s): es of `best` (float64, direct)
    lower_bound: float  # proved lower bound on ES(s)
    es_pool: float
    best: np.ndarray = field(repr=False)  # kept key indices (ascending) achieving es_cert
    improvement: float  # 1 - es_cert / es_pool (0 when es_pool = 0)
    solves: tuple[SolveRecord, ...] = field(repr=False)
    seconds: float
    mass_floor: float = 0.0  # phi of the split
    low_mass_bound: float = 0.0  # B_low: es(A) >= B_low for every kept set with p(A) < phi

    @property
    def n_solves(self) -> int:
        return len(self.solves)

    @property
    def max_solve_seconds(self) -> float:
        return max((r.seconds for r in self.solves), default=0.0)

    @property
    def nodes(self) -> int:
        return sum(r.nodes for r in self.solves)

    @property
    def work(self) -> int:
        return sum(r.work for r in self.solves)


@dataclass(frozen=True)
class MinimiseResult:
    status: str  # "optimal" (proved), "timelimit", "memlimit", "error", "numerical"
    es: float  # float64 es of `best`
    best: np.ndarray
    iterations: int
    seconds: float
    message: str = ""


@dataclass(frozen=True)
class SolverOptions:
    time_limit: float = DEFAULT_TIME_LIMIT  # seconds per solve (SCIP limits/time): the safety net
    node_limit: int | None = DEFAULT_NODE_LIMIT  # SCIP limits/totalnodes per solve (None: none)
    lp_iteration_limit: int | None = DEFAULT_LP_ITERATION_LIMIT  # LP iterations per solve (None: none)
    memory_limit_mb: float = 8192.0  # SCIP limits/memory
    feastol: float = DEFAULT_FEASTOL
    seed: int = 0
    cone: str = "sqrt"  # "sqrt": sqrt(sum y^2) <= t;  "quad": sum y^2 <= t^2, t >= 0
    threads: int = 1


# ---------------------------------------------------------------------------------------------
# model construction
# ---------------------------------------------------------------------------------------------


def _scale(inst: Instance, z0: np.ndarray) -> float:
    c = float(np.linalg.norm(inst.w_of(z0).sum(axis=0)))
    if not np.isfinite(c) or c <= 0.0:
        c = float(inst.single_key_errors.max())
    return c if c > 0.0 else 1.0


def _new_model(opts: SolverOptions):
    import pyscipopt as ps

    m = ps.Model()
    m.hideOutput()
    m.setParam("limits/time", float(opts.time_limit))
    m.setParam("limits/memory", float(opts.memory_limit_mb))
    m.setParam("numerics/feastol", float(opts.feastol))
    m.setParam("randomization/randomseedshift", int(opts.seed))
    m.setParam("parallel/maxnthreads", int(opts.threads))
    m.setParam("lp/threads", int(opts.threads))
    m.setParam("timing/clocktype", 2)  # wall clock
    if opts.node_limit is not None:
        m.setParam("limits/totalnodes", int(opts.node_limit))  # every node, across restarts
    if opts.lp_iteration_limit is not None:
        _LPBudget.attach(m, int(opts.lp_iteration_limit))
    return m


class _LPBudget:
    """Stops a solve once its LP iterations reach a limit: SCIP has no such limit of its own, so an
    event handler reads SCIPgetNLPIterations after every solved LP and interrupts the solve.  The
    count, and so where the solve stops, does not depend on the clock (one thread)."""

    @staticmethod
    def attach(m, limit: int):
        import pyscipopt as ps

        class Handler(ps.Eventhdlr):
            hit = False

            def eventinit(self):
                self.model.catchEvent(ps.SCIP_EVENTTYPE.LPSOLVED, self)

            def eventexit(self):
                self.model.dropEvent(ps.SCIP_EVENTTYPE.LPSOLVED, self)

            def eventexec(self, event):
                if not self.hit and self.model.getNLPIterations() >= limit:
                    self.hit = True
                    self.model.interruptSolve()

        h = Handler()
        m.includeEventhdlr(h, "trustmass_lp_budget", "interrupts the solve at an LP-iteration budget")
        m.data = h  # keeps the handler alive with the model; read by _classify
        return h


def _build(inst: Instance, s: int, Wt: np.ndarray, opts: SolverOptions):
    """Variables and the structural constraints shared by both programs; returns (m, z, y)."""
    import pyscipopt as ps

    N, d = Wt.shape
    m = _new_model(opts)
    z = [m.addVar(vtype="B", name=f"z{j}") for j in range(N)]
    y = [m.addVar(lb=None, ub=None, name=f"y{k}") for k in range(d)]
    m.addCons(ps.quicksum(z) == s, name="card")
    for k in range(d):
        col = Wt[:, k]
        nz = np.flatnonzero(col)
        m.addCons(ps.quicksum(float(col[j]) * z[j] for j in nz) - y[k] == 0, name=f"y{k}")
    return m, z, y


def _cone(m, y, rhs, cone: str):
    import pyscipopt as ps

    if cone == "sqrt":
        m.addCons(ps.sqrt(ps.quicksum(yk * yk for yk in y)) <= rhs, name="soc")
    elif cone == "quad":
        m.addCons(ps.quicksum(yk * yk for yk in y) <= rhs * rhs, name="soc")
    else:
        raise ValueError(f"cone must be 'sqrt' or 'quad', got {cone!r}")


def _add_start(m, z, y, extra: list, Wt: np.ndarray, keys: np.ndarray) -> bool:
    """Offer the kept set `keys` as a primal solution; returns whether it is feasible (and added).

    In MISOCP(tau) the ES_pool argmin is feasible exactly when tau >= es(z0) (spec §3.3), so in
    the bisection (tau < hi <= ES_pool) it is checked and declined; in `minimise` it is always
    feasible and becomes SCIP's incumbent (primal bound 0).
    """
    sol = m.createSol()
    chosen = np.zeros(len(z), dtype=bool)
    chosen[keys] = True
    for j, var in enumerate(z):
        m.setSolVal(sol, var, 1.0 if chosen[j] else 0.0)
    g = Wt[keys].sum(axis=0)
    for k, var in enumerate(y):
        m.setSolVal(sol, var, float(g[k]))
    for var, value in extra:
        m.setSolVal(sol, var, float(value))
    feasible = bool(m.checkSol(sol, printreason=False, completely=True, original=True))
    if feasible:
        m.addSol(sol, free=True)
    else:
        m.freeSol(sol)
    return feasible


def _read_subset(m, z) -> np.ndarray | None:
    if m.getNSols() == 0:
        return None
    best = m.getBestSol()
    return np.flatnonzero([m.getSolVal(best, v) > 0.5 for v in z]).astype(np.int64)


def _classify(scip_status: str, budget_hit: bool = False) -> str:
    if scip_status == "infeasible":
        return INFEASIBLE
    if scip_status in ("nodelimit", "totalnodelimit") or (scip_status == "userinterrupt" and budget_hit):
        return WORKLIMIT
    if scip_status == "timelimit":
        return TIMELIMIT
    if scip_status == "memlimit":
        return MEMLIMIT
    return ""


def _lp_iterations(m) -> int:
    try:
        return int(m.getNLPIterations())
    except Exception:  # noqa: BLE001 -- a model that never solved an LP
        return 0


def low_mass_bound(inst: Instance, floor: float) -> float:
    """A lower bound on es(A) over every kept set with p(A) < floor (module docstring): the distance
    from mu to the hull of the values of the keys with p_j < floor, read as min_j x.(v_j - mu)/||x||
    for the projection's x (a separating hyperplane: valid for any x).  inf when no key is that light."""
    low = np.flatnonzero(inst.p < floor)
    if low.size == 0:
        return float("inf")
    x = project_onto_hull(inst.v[low], inst.mu).point - inst.mu
    norm = float(np.linalg.norm(x))
    if norm == 0.0:
        return 0.0
    return max(0.0, float(((inst.v[low] - inst.mu) @ x).min()) / norm)


def _untrusted(inst: Instance, keys: np.ndarray, found: float, tau: float) -> str:
    """Why a subset SCIP called feasible is not: typically keys of near-zero mass, whose w_j and p_j
    fall below SCIP's absolute tolerances (epsilon 1e-9), so both sides of the cone read as 0."""
    mass = float(inst.p[keys].sum())
    return (
        f"SCIP's subset of {len(keys)} keys has float64 es = {found / tau:.4g} x tau and kept mass {mass:.3g} "
        f"(largest key mass {float(inst.p.max()):.3g}); not trusted"
    )


def solve_feasibility(
    inst: Instance, s: int, tau: float, z0: np.ndarray, opts: SolverOptions, mass_floor: float = 0.0
) -> tuple[SolveRecord, np.ndarray | None]:
    """One MISOCP(tau) feasibility solve over all keys, z0 offered as primal solution.

    Returns (record, subset or None); the subset is returned only when its float64 es <= tau
    (relative ACCEPT_REL), i.e. outcome "feasible".  Never raises.
    """
    t0 = time.perf_counter()
    scip_status, nodes, work, accepted, keys = "", 0, 0, False, None
    try:
        c = _scale(inst, z0)
        Wt = inst.w / c
        m, z, y = _build(inst, s, Wt, opts)
        t = m.addVar(lb=0.0, ub=None, name="t")
        pt = inst.p * (tau / c)
        import pyscipopt as ps

        m.addCons(t - ps.quicksum(float(pt[j]) * z[j] for j in range(len(z))) == 0, name="tau")
        if mass_floor > 0.0:
            # the split's heavy side, p^T z >= floor, as a lower bound on t = tau~ p^T z.  With it a
            # primal heuristic of SCIP (PySCIPOpt 6.3) corrupted its heap on a real N = 4,040 row (sqrt
            # cone; heuristics off: proved infeasible in 1.5 s), so floor probes run without them.
            m.chgVarLb(t, float(tau / c * mass_floor))
            m.setHeuristics(ps.SCIP_PARAMSETTING.OFF)
        _cone(m, y, t, opts.cone)
        accepted = _add_start(m, z, y, [(t, float(pt[z0].sum()))], Wt, z0)
        m.optimize()
        scip_status = m.getStatus()
        nodes, work = int(m.getNTotalNodes()), _lp_iterations(m)
        keys = _read_subset(m, z)
        outcome = _classify(scip_status, bool(getattr(m.data, "hit", False)))
        if keys is not None and outcome not in (MEMLIMIT,):
            found = es(inst, keys)
            ok = len(keys) == s and found <= tau * (1.0 + ACCEPT_REL) + 1e-300
            msg = "" if ok else _untrusted(inst, keys, found, tau)
            rec = SolveRecord(
                tau,
                FEASIBLE if ok else NUMERICAL,
                time.perf_counter() - t0,
                nodes,
                found,
                accepted,
                scip_status,
                msg,
                mass_floor,
                work,
            )
            return rec, (keys if ok else None)
        if not outcome:
            outcome = ERROR
        msg = "" if outcome != ERROR else f"unexpected SCIP status {scip_status!r} without a solution"
        return SolveRecord(
            tau, outcome, time.perf_counter() - t0, nodes, None, accepted, scip_status, msg, mass_floor, work
        ), None
    except Exception as exc:  # noqa: BLE001 - crash: record, never raise
        msg = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
        outcome = MEMLIMIT if isinstance(exc, MemoryError) else ERROR
        return SolveRecord(
            tau, outcome, time.perf_counter() - t0, nodes, None, accepted, scip_status, msg, mass_floor
        ), None


def _solve(inst: Instance, s: int, tau: float, z0: np.ndarray, opts: SolverOptions, mass_floor: float, isolate: bool):
    """solve_feasibility, in a forked child when `isolate` (a crash is outcome `error`; a solve still
    running 1.5 x its seconds limit + 60 s later is the safety net's, `timelimit`)."""
    if not isolate:
        return solve_feasibility(inst, s, tau, z0, opts, mass_floor)
    from trustmass.plumbing.isolation import TIMEOUT, isolated_call

    t0 = time.perf_counter()
    out = isolated_call(solve_feasibility, (inst, s, tau, z0, opts, mass_floor), timeout_s=1.5 * opts.time_limit + 60.0)
    if out.ok:
        return out.value
    message = f"solve {out.reason}: {out.message}"[:1000]
    outcome = TIMELIMIT if out.reason == TIMEOUT else ERROR
    return SolveRecord(tau, outcome, time.perf_counter() - t0, 0, None, False, "", message, mass_floor), None


# ---------------------------------------------------------------------------------------------
# bisection (spec §3.4)
# ---------------------------------------------------------------------------------------------


def resolve_incumbent(inst: Instance, s: int, es_pool: float | None, incumbent) -> tuple[float, np.ndarray]:
    """(es, sorted keys) of the incumbent: the ES_pool argmin when none is given, else the given keys,
    whose es must agree with ``es_pool`` where that is given (both certifiers start from it)."""
    if incumbent is None:
        from trustmass.core.enumeration import extras_for_budget, pool_optimum

        po = pool_optimum(inst, s, extras_for_budget(s))
        return po.es_pool, np.sort(po.kept)
    z0 = np.sort(np.asarray(incumbent, dtype=np.int64).reshape(-1))
    if len(np.unique(z0)) != s:
        raise ValueError(f"incumbent must be {s} distinct keys, got {z0.tolist()}")
    direct = es(inst, z0)
    if es_pool is not None and abs(direct - es_pool) > 1e-9 * max(direct, es_pool, 1e-300):
        raise ValueError(f"es_pool={es_pool!r} disagrees with es(incumbent)={direct!r}")
    return direct, z0


def certify(
    inst: Instance,
    s: int,
    incumbent=None,
    es_pool: float | None = None,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    node_limit: int | None = DEFAULT_NODE_LIMIT,
    lp_iteration_limit: int | None = DEFAULT_LP_ITERATION_LIMIT,
    memory_limit_mb: float = 8192.0,
    rel_gap: float = DEFAULT_REL_GAP,
    feastol: float = DEFAULT_FEASTOL,
    seed: int = 0,
    cone: str = "sqrt",
    max_solves: int = 64,
    isolate_solves: bool = False,
) -> Certificate:
    """Certify (or improve) the pool optimum by MISOCP bisection over all keys (spec §3.4).

    `incumbent` is the ES_pool argmin (key indices); when omitted it is computed with
    `pool_optimum(inst, s, extras_for_budget(s))`.  `es_pool`, if given, must equal
    es(incumbent) and is otherwise recomputed.  Never raises on solver trouble.  With
    `isolate_solves` every solve runs in a forked child: a SCIP crash (heap corruption was seen,
    see solve_feasibility) is outcome `error`.

    Each solve stops at its work budget -- `node_limit` SCIP nodes (limits/totalnodes, one thread),
    `lp_iteration_limit` LP iterations -- outcome `worklimit`, which ends the bisection as the
    paper's time limit did (`undecided` unless already decided): the same on any machine and load.
    `time_limit` seconds per solve is the safety net: a solve it stops (or one still running 1.5 x
    the limit + 60 s later, isolated) is outcome `timelimit`, and the instance `safety_stop`.
    """
    start = time.perf_counter()
    es_pool, z0 = resolve_incumbent(inst, s, es_pool, incumbent)
    opts = SolverOptions(
        time_limit=time_limit,
        node_limit=node_limit,
        lp_iteration_limit=lp_iteration_limit,
        memory_limit_mb=memory_limit_mb,
        feastol=feastol,
        seed=seed,
        cone=cone,
    )
    records: list[SolveRecord] = []
    hi, best, lo = es_pool, z0, 0.0

    floor, b_low = 0.0, 0.0  # set before the first probe

    def finish(status: str) -> Certificate:
        improvement = 0.0 if es_pool <= 0.0 else 1.0 - hi / es_pool
        return Certificate(
            status,
            float(hi),
            float(lo),
            float(es_pool),
            best,
            float(improvement),
            tuple(records),
            time.perf_counter() - start,
            float(floor),
            float(b_low),
        )

    if s >= inst.n_keys or is_zero(es_pool, radius(inst)):
        lo = hi  # nothing to improve: ES >= 0 = es_pool, or every key is kept
        return finish(CONFIRMED_OPTIMAL)

    floor = MASS_FLOOR_REL * float(inst.p[z0].sum())
    b_low = low_mass_bound(inst, floor * (1.0 + s * FLOOR_EPS))  # the sets the program leaves out

    def probe(tau: float) -> str:
        nonlocal hi, best, lo
        split = math.isfinite(b_low) and b_low > tau  # sound only then; no light keys: nothing to split
        rec, keys = _solve(inst, s, tau, best, opts, floor if split else 0.0, isolate_solves)
        records.append(rec)
        if rec.outcome == FEASIBLE and rec.es_found < hi:
            hi, best = rec.es_found, keys
        elif rec.outcome == INFEASIBLE:
            lo = max(lo, tau)
        return rec.outcome

    def improved() -> bool:
        return hi < MATERIAL * es_pool

    # spec: bisection continues only while no solve has hit its limit (or was untrustworthy); the
    # limit is the work budget, the time limit only the safety net's
    halts = (WORKLIMIT, TIMELIMIT, NUMERICAL)
    first = probe(FIRST_PROBE * es_pool)
    if first == INFEASIBLE:
        return finish(CONFIRMED_OPTIMAL)
    if first in (MEMLIMIT, ERROR):
        return finish(UNSOLVED)
    stopped = first in halts
    if not improved() and first != NUMERICAL:
        second = probe(MATERIAL * es_pool)  # step 3: also run after a first-probe limit
        if second in (MEMLIMIT, ERROR):
            return finish(UNSOLVED)
        stopped = stopped or second in halts
    scale = radius(inst)
    while not stopped and hi - lo > rel_gap * hi and not is_zero(hi, scale) and len(records) < max_solves:
        outcome = probe(0.5 * (lo + hi))
        if outcome in (MEMLIMIT, ERROR):
            return finish(IMPROVED if improved() else UNSOLVED)
        stopped = outcome in halts
    if any(r.outcome == TIMELIMIT for r in records):
        return finish(SAFETY_STOP)  # a clock decided part of it: never passed off as undecided
    if improved():
        return finish(IMPROVED)
    if lo >= MATERIAL * es_pool:
        return finish(WITHIN_1PCT)
    return finish(UNDECIDED)


# ---------------------------------------------------------------------------------------------
# direct minimisation (Dinkelbach), for tests and references
# ---------------------------------------------------------------------------------------------


def minimise(
    inst: Instance,
    s: int,
    incumbent=None,
    *,
    time_limit: float = 60.0,
    memory_limit_mb: float = 8192.0,
    feastol: float = DEFAULT_FEASTOL,
    seed: int = 0,
    cone: str = "sqrt",
    max_iter: int = 50,
) -> MinimiseResult:
    """min over size-s kept sets of es(A), all keys, by Dinkelbach iterations.

    Each iteration solves min ||W z|| - tau p^T z (an MISOCP whose optimum is < 0 iff some A has
    es(A) < tau), starting at tau = es(incumbent) with the incumbent as primal solution (always
    feasible, objective 0).  Stops when the proved optimum is >= 0 up to tolerance.
    """
    import pyscipopt as ps

    start = time.perf_counter()
    opts = SolverOptions(time_limit=time_limit, memory_limit_mb=memory_limit_mb, feastol=feastol, seed=seed, cone=cone)
    if incumbent is None:
        incumbent = np.arange(min(s, inst.n_keys))
    best = np.sort(np.asarray(incumbent, dtype=np.int64))
    tau = es(inst, best)
    if s >= inst.n_keys:
        return MinimiseResult("optimal", tau, best, 0, time.perf_counter() - start)
    it = 0
    try:
        while it < max_iter:
            it += 1
            c = _scale(inst, best)
            Wt = inst.w / c
            m, z, y = _build(inst, s, Wt, opts)
            r = m.addVar(lb=0.0, ub=None, name="r")
            pt = inst.p * (tau / c)
            m.setObjective(r - ps.quicksum(float(pt[j]) * z[j] for j in range(len(z))), "minimize")
            _cone(m, y, r, cone)
            _add_start(m, z, y, [(r, float(np.linalg.norm(Wt[best].sum(axis=0))))], Wt, best)
            m.optimize()
            status = m.getStatus()
            keys = _read_subset(m, z)
            if status != "optimal":
                if keys is not None and es(inst, keys) < tau:
                    best, tau = keys, es(inst, keys)
                return MinimiseResult(
                    status if status in ("timelimit", "memlimit") else "error",
                    tau,
                    best,
                    it,
                    time.perf_counter() - start,
                )
            found = es(inst, keys)
            if found < tau * (1.0 - 1e-12):
                best, tau = keys, found
                continue
            # optimum >= -tol: no kept set beats tau by more than SCIP's tolerance
            return MinimiseResult("optimal", tau, best, it, time.perf_counter() - start)
        return MinimiseResult("numerical", tau, best, it, time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - crash: record, never raise
        return MinimiseResult("error", tau, best, it, time.perf_counter() - start, f"{type(exc).__name__}: {exc}")
