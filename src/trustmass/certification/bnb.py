"""The branch-and-bound certifier: ES_pool certified (or improved) over all keys without a MISOCP
solver, by a search that reuses the exact-enumeration idea (Gram sums, partial sums carried down a
depth-first walk) at the leaves and a cardinality-aware bound at the nodes.

Kept sets are walked in *mass order* (`bnb_kernels`): a node fixes its heaviest members F and takes
the remaining r keys from the lighter ones.  A node is pruned when, for some unit u,

    u.g_F - tau p(F) + (sum of the r smallest p_i (u.(v_i - mu) - tau) over the keys it may take) > 0,

which proves es(A) > tau for every A of the node: it knows that only r keys can be added (the hull
bound of all light keys does not).  u is g_F's direction (from G = W W^T, O(1) per key), then a few
supergradient steps where that fails.  The root's cut -- no kept set whose heaviest member is lighter
than rank k -- uses directions of the light tail's hull.  Sound whatever the directions are.

Per instance (`certify_bnb`), with a work budget (the paper has a time limit per solve):

1. hi = ES_pool, best = its argmin; swap descent over all keys from it and from seeded starts in
   mass bands can only lower hi (every set re-scored by `es` in float64);
2. probe tau = 0.99 hi: proved empty gives lo = tau (the pool optimum is then within 1 %); a leaf
   with es <= tau lowers hi (improvement) and the same search goes on at tau = 0.99 of the new hi
   (every cut made at a tau holds at a lower one).  Not done after ESCALATE_WORK units, the probe
   first spends up to ILS_WORK units of its budget on a better incumbent: more starts and an
   iterated local search (`_Incumbent`).  On the diffuse rows the incumbent of step 1 was often far from the optimum
   (the sets the search later found were 10-40 % lower), and a probe at 0.99 of a poor incumbent
   cannot prune: the sets below it keep every node alive;
3. then tau = (1 - 1e-6) hi: proved empty gives lo = tau (optimal to 1e-6);
4. statuses as the paper's bisection (`misocp.certify`): improved / confirmed_optimal / within_1pct /
   undecided (the work budget ran out) / safety_stop (the seconds safety net stopped a probe) --
   the fields of `misocp.Certificate`.  Everything but the seconds is a function of the inputs and
   the budget: the same on any load, any shard split.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from trustmass.certification import bnb_kernels as K
from trustmass.certification.misocp import (
    CONFIRMED_OPTIMAL,
    FEASIBLE,
    FIRST_PROBE,
    IMPROVED,
    INFEASIBLE,
    MATERIAL,
    SAFETY_STOP,
    TIMELIMIT,
    UNDECIDED,
    WITHIN_1PCT,
    WORKLIMIT,
    Certificate,
    SolveRecord,
    resolve_incumbent,
)
from trustmass.core.operator import Instance, es, is_zero, radius
from trustmass.core.simplex import project_onto_hull

#: the probe that makes a pool optimum "within 1 %" (then the one for "optimal")
GAP_PROBE = MATERIAL
#: work units per compiled call: the safety net's clock is read between calls (about 0.02-0.05 s)
CHUNK_WORK = 1 << 25
#: a probe's work budget when none is given (config.yaml: certification.bnb_work, in millions)
DEFAULT_PROBE_WORK = 5_000_000_000
#: the safety net's outcome of a probe (`_Probe.run`), beside bnb_kernels' INFEASIBLE / FOUND / RUNNING
CLOCK = 3
#: a found set counts when its float64 es <= tau (1 + ACCEPT_REL)
ACCEPT_REL = 1e-7
#: the gap probe's work after which, not done, it escalates: ESCALATE_STARTS more seeded starts and an
#: iterated local search of ILS_WORK units for a better incumbent (`_Incumbent`), out of its budget.
#: Fixed amounts, not shares of the budget: a search with a larger budget goes the same way and further
#: (one run gives the budget -> gap curve)
ESCALATE_WORK = 2_000_000_000
ESCALATE_STARTS = 48
ILS_WORK = 2_000_000_000
#: local optima the iterated local search walks from, in turn
CHAINS = 4
#: supergradient steps per bound where g_F's direction does not prune (more prune more, each O(N d))
ASCENT_ITERS = 16
#: tails of the mass order whose hull directions give the root's cut (fractions of N)
TAIL_FRACTIONS = (0.5, 0.25, 0.125, 0.0625)


@dataclass
class Prepared:
    """An instance in mass order: ranks -> keys, masses, centred values, w rows, Gram matrix."""

    order: np.ndarray
    P: np.ndarray
    V: np.ndarray
    W: np.ndarray
    G: np.ndarray
    wnorm: np.ndarray
    maxw_from: np.ndarray  # max ||w_i|| over ranks >= k
    tails: list  # unit directions for the root's cut

    @classmethod
    def of(cls, inst: Instance) -> Prepared:
        order = inst.mass_order
        P = np.ascontiguousarray(inst.p[order])
        V = np.ascontiguousarray(inst.v[order] - inst.mu)
        W = P[:, None] * V
        wnorm = np.linalg.norm(W, axis=1)
        maxw_from = np.maximum.accumulate(wnorm[::-1])[::-1].copy()
        return cls(order, P, V, W, W @ W.T, wnorm, maxw_from, _tail_directions(V))

    def tail(self, tau: float) -> np.ndarray:
        """max_{i >= k} ||w_i|| + tau p_k: no key of rank >= k has a bound term below -tail[k]."""
        return self.maxw_from + tau * self.P

    def ranks(self, keys) -> np.ndarray:
        where = np.empty_like(self.order)
        where[self.order] = np.arange(self.order.shape[0])
        return np.sort(where[np.asarray(keys, dtype=np.int64)])


def _tail_directions(V: np.ndarray) -> list:
    """Unit normals separating mu from the hull of the lightest keys (several tail lengths)."""
    n = V.shape[0]
    out = []
    for f in TAIL_FRACTIONS:
        k = int(n * (1.0 - f))
        if n - k < 2:
            continue
        x = project_onto_hull(V[k:], np.zeros(V.shape[1])).point
        norm = float(np.linalg.norm(x))
        if norm > 0.0:
            out.append(x / norm)
        c = V[k:].mean(axis=0)  # the tail's centroid: cheap, often nearly as good
        if np.linalg.norm(c) > 0.0:
            out.append(c / np.linalg.norm(c))
    return out


def root_cut(prep: Prepared, s: int, tau: float) -> tuple[int, np.ndarray]:
    """(k, u): the first rank k such that no kept set whose members all have rank >= k has es <= tau,
    proved along the tail direction u that cuts most (n - s + 1 when none proves a cut)."""
    n, d = prep.V.shape
    best, best_u = n - s + 1, None
    tail = prep.tail(tau)
    buf = np.empty(s + 1)
    for u in prep.tails:
        y = prep.P * (prep.V @ u - tau)
        k = int(K.suffix_cut(y, 0, n, s, 0.0, tail, 0.0, K.REL_MARGIN * s, 0.0, prep.maxw_from, buf))
        if best_u is None or k < best:
            best, best_u = k, u
    return best, (np.eye(1, d)[0] if best_u is None else best_u)


def _polish(
    prep: Prepared, inst: Instance, s: int, ranks: np.ndarray, max_rounds: int = 200
) -> tuple[float, np.ndarray]:
    A = np.array(ranks, dtype=np.int64)
    K.swap_descent(prep.G, prep.P, A, max_rounds)
    keys = np.sort(prep.order[A])
    return es(inst, keys), keys


class _Incumbent:
    """The best set found so far and the local search that improves it (deterministic: seeded).

    `starts` descends (best-improvement swaps over all keys, `bnb_kernels.swap_descent`) from seeded
    sets in mass bands; `iterate` is an iterated local search from the best local optima found: swap
    2, s/4 or s/2 keys of a set for keys of its mass range, descend again, keep the result where it is
    better.  `hi`/`best` is the best set by its float64 es (`trustmass.core.operator.es`), the
    incumbent the certificate reports; `work` counts s N WORK units per descent round."""

    def __init__(self, prep: Prepared, inst: Instance, s: int, hi: float, best: np.ndarray, seed: int):
        self.prep, self.inst, self.s = prep, inst, s
        self.hi, self.best = hi, best
        self.work = 0
        self.optima: list[tuple[float, np.ndarray]] = []  # distinct local optima (Gram value, ranks), best first
        self.rng = np.random.default_rng(np.random.SeedSequence([int(seed), 15]))
        self.drawn = 0
        self._keep(*self._descend(prep.ranks(best)))

    def _descend(self, ranks) -> tuple[float, np.ndarray]:
        A = np.array(ranks, dtype=np.int64)
        value, done = K.swap_descent(self.prep.G, self.prep.P, A, 200)
        self.work += (int(done) + 1) * self.s * self.prep.P.shape[0]
        return float(value), np.sort(A)

    def _keep(self, value: float, A: np.ndarray) -> bool:
        keys = np.sort(self.prep.order[A])
        found = es(self.inst, keys)
        if found < self.hi:
            self.hi, self.best = found, keys
        if any(np.array_equal(A, B) for _, B in self.optima):
            return False
        self.optima.append((value, A))
        self.optima.sort(key=lambda o: o[0])
        del self.optima[CHAINS:]
        return True

    def starts(self, count: int) -> None:
        n, s = self.prep.P.shape[0], self.s
        bands = [(0, min(n, 4 * s)), (min(n, s), min(n, 32 * s)), (min(n, 8 * s), n), (0, n)]
        for _ in range(count):
            lo, up = bands[self.drawn % len(bands)]
            self.drawn += 1
            if up - lo < s:
                lo, up = 0, n
            self._keep(*self._descend(self.rng.choice(np.arange(lo, up), size=s, replace=False)))

    def iterate(self, work: int) -> None:
        """Iterated local search from each of the CHAINS best local optima in turn, until it has spent
        `work` units (checked between descents: deterministic)."""
        n, s = self.prep.P.shape[0], self.s
        if n <= s:
            return
        sizes = tuple(sorted({min(s, 2), max(1, s // 4), max(1, s // 2)}))
        ranks = np.arange(n)
        chains = [o for o in self.optima]
        stop = self.work + int(work)
        i = 0
        while self.work < stop:
            c = i % len(chains)
            value, A = chains[c]
            k = sizes[(i // len(chains)) % len(sizes)]
            i += 1
            A = A.copy()
            inside = np.zeros(n, dtype=bool)
            inside[A] = True
            up = min(n, 8 * int(A.max()) + 8)  # the set's mass range, and as far again
            pool = ranks[:up][~inside[:up]]
            if pool.shape[0] < k:
                pool = ranks[~inside]
            A[self.rng.choice(s, size=k, replace=False)] = self.rng.choice(pool, size=k, replace=False)
            found, A = self._descend(A)
            if found < value * (1.0 - 1e-12):
                chains[c] = (found, A)
                self._keep(found, A)


class _Probe:
    """One resumable search at a fixed tau."""

    def __init__(self, prep: Prepared, s: int, tau: float, ascent_iters: int):
        n, d = prep.W.shape
        self.prep, self.s, self.tau, self.ascent = prep, s, tau, ascent_iters
        index = np.zeros(s + 1, dtype=np.int64)
        self.state = (
            np.array([-1], dtype=np.int64),
            np.zeros(s, dtype=np.int64),
            index.copy(),
            index.copy(),
            index.copy(),
            np.zeros((s + 1, d)),
            np.zeros(s + 1),
            np.zeros((s + 1, n)),
            np.zeros(s + 1),
            np.zeros((s + 1, d)),
            np.zeros(s + 1),
        )
        self.root, self.u_root = root_cut(prep, s, tau)
        self.tail = prep.tail(tau)
        self.nodes = 0
        self.work = 0

    def lower(self, tau: float) -> None:
        """Go on at a lower tau (after a set at the old one was found): every cut made so far holds."""
        assert tau <= self.tau
        self.tau = tau
        self.tail = self.prep.tail(tau)

    def run(self, work_limit: int, deadline: float = math.inf):
        """(outcome, ranks of a found leaf or None) once the search ends, has spent `work_limit` work
        units in all (K.RUNNING) or, checked between compiled calls of CHUNK_WORK units, the clock
        passes `deadline` (CLOCK: the safety net).  Where it stops depends on the work alone."""
        p = self.prep
        while True:
            if self.work >= work_limit:
                return K.RUNNING, None
            if time.perf_counter() >= deadline:
                return CLOCK, None
            out, nodes, work = K.dfs(
                p.W,
                p.V,
                p.P,
                p.G,
                p.wnorm,
                p.maxw_from,
                self.tail,
                self.s,
                self.tau,
                self.root,
                self.u_root,
                self.ascent,
                min(CHUNK_WORK, work_limit - self.work),
                *self.state,
            )
            self.nodes += int(nodes)
            self.work += int(work)
            if out == K.FOUND:
                return out, self.state[1].copy()
            if out == K.INFEASIBLE:
                return out, None


def certify_bnb(
    inst: Instance,
    s: int,
    incumbent=None,
    es_pool: float | None = None,
    *,
    work_limit: int = DEFAULT_PROBE_WORK,
    total_work_limit: int | None = None,
    time_limit: float | None = None,
    max_solves: int = 64,
    starts: int = 16,
    ascent_iters: int = ASCENT_ITERS,
    seed: int = 0,
) -> Certificate:
    """Certify (or improve) the pool optimum with the branch-and-bound search (module docstring).

    The budget decides: `work_limit` work units (`bnb_kernels`: WORK) per probe, `total_work_limit`
    (default: two probes' worth) for the instance, local search included.  A probe that spends its
    budget is outcome `worklimit` and the instance `undecided` (unless already decided), the same on
    any machine.
    `time_limit` seconds per probe is only a safety net (None: none): a probe it stops is outcome
    `timelimit` and the instance `safety_stop`, a status of its own (its result depends on the
    clock).  Returns the bisection's `Certificate` fields."""
    start = time.perf_counter()
    total = 2 * int(work_limit) if total_work_limit is None else int(total_work_limit)
    es_pool, z0 = resolve_incumbent(inst, s, es_pool, incumbent)
    hi, best, lo = es_pool, z0, 0.0
    records: list[SolveRecord] = []
    searched = 0  # work units of the finished searches

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
        )

    if s >= inst.n_keys or is_zero(es_pool, radius(inst)):
        lo = hi
        return finish(CONFIRMED_OPTIMAL)
    prep = Prepared.of(inst)
    t0 = time.perf_counter()
    local = _Incumbent(prep, inst, s, hi, best, seed)
    local.starts(starts)
    hi, best = local.hi, local.best
    records.append(SolveRecord(hi, FEASIBLE, time.perf_counter() - t0, 0, hi, True, "local_search", work=local.work))
    escalated = False

    def probe(factor: float) -> str:
        """Search at tau = factor * hi until proved empty, its work budget or the safety net; a set
        found at or below tau lowers hi and the same search goes on at the new factor * hi.  The gap
        probe, not done after ESCALATE_WORK units, first spends up to ILS_WORK units of its budget on
        a better incumbent (`_Incumbent`)."""
        nonlocal hi, best, lo, searched, escalated
        t1 = time.perf_counter()
        deadline = math.inf if time_limit is None else t1 + time_limit
        search = _Probe(prep, s, factor * hi, ascent_iters)
        local_before = local.work
        budget = min(int(work_limit), total - searched - local.work)
        mark = [0, 0, t1, local.work]  # search work, nodes, clock and local work at the last record

        def record(outcome: str, found=None, solver: str = "bnb") -> None:
            now = time.perf_counter()
            work = search.work - mark[0] + local.work - mark[3]
            nodes = search.nodes - mark[1]
            records.append(SolveRecord(search.tau, outcome, now - mark[2], nodes, found, True, solver, work=work))
            mark[:] = [search.work, search.nodes, now, local.work]

        def limit() -> int:  # the search's share of the probe's budget: what local search has not taken
            return max(0, budget - (local.work - local_before))

        escalate = factor == GAP_PROBE and not escalated
        while True:
            out, ranks = search.run(min(ESCALATE_WORK, limit()) if escalate else limit(), deadline)
            if out == K.RUNNING and escalate and limit() > search.work:
                escalate, escalated = False, True
                local.starts(ESCALATE_STARTS)
                local.iterate(min(ILS_WORK, limit() - search.work) - (local.work - local_before))
                if local.hi < hi:
                    hi, best = local.hi, local.best
                    record(FEASIBLE, hi, "local_search")
                    search.lower(min(factor * hi, search.tau))
                continue
            if out == K.FOUND:
                keys = np.sort(prep.order[ranks])
                found = es(inst, keys)
                if found > search.tau * (1.0 + ACCEPT_REL):
                    continue  # the compiled leaf test and float64 disagree: not a set at tau, go on
                if found < local.hi:
                    local.hi, local.best = found, keys
                local._keep(*local._descend(ranks))  # polished, and a local optimum to walk from
                hi, best = local.hi, local.best
                record(FEASIBLE, hi)
                if len(records) > max_solves:
                    out = K.RUNNING  # as many sets as solves allowed: the budget's end
                else:
                    search.lower(min(factor * hi, search.tau))
                    continue
            outcome = {K.INFEASIBLE: INFEASIBLE, K.RUNNING: WORKLIMIT, CLOCK: TIMELIMIT}[out]
            if outcome == INFEASIBLE:
                lo = max(lo, search.tau)
            record(outcome)
            searched += search.work
            return outcome

    outcome = INFEASIBLE
    for factor in (GAP_PROBE, FIRST_PROBE):
        if searched + local.work >= total:  # the budget went before this probe could start
            outcome = WORKLIMIT
            records.append(SolveRecord(factor * hi, WORKLIMIT, 0.0, 0, None, True, "bnb"))
            break
        outcome = probe(factor)
        if outcome in (WORKLIMIT, TIMELIMIT):
            break
    if outcome == TIMELIMIT:
        return finish(SAFETY_STOP)
    if hi < MATERIAL * es_pool:
        return finish(IMPROVED)
    if lo >= FIRST_PROBE * es_pool and hi == es_pool:
        return finish(CONFIRMED_OPTIMAL)
    if lo >= MATERIAL * es_pool:
        return finish(WITHIN_1PCT)
    return finish(UNDECIDED)


def warm_up() -> None:
    """Load the compiled kernels (numba's on-disk cache) in this process, so that children forked
    per instance (`runner.certify_isolated`) inherit them instead of each loading them again."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(12))
    certify_bnb(Instance.from_arrays(p, rng.standard_normal((12, 3))), 3, work_limit=1 << 20, starts=1)
