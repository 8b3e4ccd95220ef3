"""Compiled kernels of the branch-and-bound certifier (`trustmass.certification.bnb`): the
cardinality-aware directional bound, the resumable depth-first search that uses it, and a swap
descent over all keys.  Everything works on keys in *mass order* (rank 0 the heaviest, ties to the
smaller index) with W = the w_j = p_j (v_j - mu) rows, P the masses and G = W W^T.

The bound (one direction).  For a unit u, |u.g_A| <= ||g_A||, so es(A) <= tau implies
u.g_A - tau p(A) <= 0.  A set is F (fixed) plus r keys B of a rank range R; the smallest
u.g_A - tau p(A) over every such B is exact by selection:

    beta_tau(u) = u.g_F - tau p(F) + (sum of the r smallest y_i = p_i (u.(v_i - mu) - tau), i in R).

If beta_tau(u) > 0 for any unit u, no set of that node has es <= tau.  (Minimising the ratio
(u.g_F + sum_B x_i) / (p(F) + sum_B p_i) over |B| = r is the parametric/Dinkelbach problem; the
test at the fixed tau of a bisection probe is its single step.)  For u = g_F / ||g_F|| the
projections come from G: u.w_i = (sum_{f in F} G_fi) / ||g_F||, O(1) per key.  beta only grows when
R shrinks, so one scan from the lightest key up gives, for every k, whether the node (F, R = [k, N))
is pruned: the ranks a node's children may take end at the first pruned k.

Rounding.  A node is pruned only when beta exceeds a margin that covers float64 error: a relative
1e-9 of the magnitudes summed, plus the error of the Gram sums (relative 1e-12 of
sum_F ||w_f|| max ||w_i|| / ||g_F||, far above d * |F| * eps).  Leaves are scored from the explicit
d-vector g_A; the caller re-scores every returned set with `trustmass.core.operator.es`.

Light keys.  Every y_i >= -(||w_i|| + tau p_i) >= -tail[k] for i >= k, with tail[k] = max_{i>=k} ||w_i||
+ tau p_k (mass order).  A scan in mass order that already holds r values below -tail[k] stops
there: no lighter key can enter the r smallest.  Thousands of keys of an N ~ 4,096 row are that
light, so a bound costs the keys that matter, not N.  The suffix scans count the keys beyond the
stop as r values -tail[stop] each (a lower bound: sound).

Work.  `dfs` counts what it does in WORK units -- about one multiply-add over one key, 0.56 ns on the
machine of benchmarks/certify.md: a key scanned along an explicit direction costs d + 2 (the dot
product and the selection), along g_F's direction GRAM_WORK, a node NODE_WORK, a completed set
LEAF_WORK, a descent N - j (the Gram sums of the new node) -- and stops once a call has spent its
budget.  A node's cost ranges over three orders of magnitude (a Gram-form prune of a few keys to a
16-step ascent over thousands), so a budget in units, unlike one in nodes, stands for a stable amount
of time; unlike seconds, it is the same on any machine and under any load.
"""

from __future__ import annotations

import numba
import numpy as np

#: outcomes of `dfs` (the search state is kept in its arrays, so RUNNING resumes)
INFEASIBLE = 0  # every set proved to have es > tau
FOUND = 1  # a leaf with es <= tau (its ranks in chosen[:s]); resumable
RUNNING = 2  # work budget spent; resumable

REL_MARGIN = 1e-9
#: WORK units of a node's fixed cost (bookkeeping, the d-vector g_F), of one completed set in Gram form
#: and of one key of a scan along g_F's direction (Gram form, with its selection): fitted to CPU time
#: over 15 probes of default-run rows and search settings (one unit about 0.56 ns here; the fit's
#: prediction within +-16 % of each probe's time; benchmarks/certify.md)
NODE_WORK = 512
LEAF_WORK = 48
GRAM_WORK = 32
#: children between two attempts to cut all of a node's remaining children
CHAIN_EVERY = 16
GRAM_MARGIN = 1e-12


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _slot(buf, m, r, v):
    """Where v enters the r smallest values held ascending in buf[:m]: (the slot it displaces or
    fills, the new m), or (-1, m) when it is not among them."""
    if m < r:
        return m, m + 1
    if v < buf[r - 1]:
        return r - 1, m
    return -1, m


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _push_small(buf, m, r, v):
    """Keep the r smallest values seen in buf[:m] ascending; returns the new m."""
    pos, m = _slot(buf, m, r, v)
    if pos >= 0:
        while pos > 0 and buf[pos - 1] > v:
            buf[pos] = buf[pos - 1]
            pos -= 1
        buf[pos] = v
    return m


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _push_small_at(vbuf, ibuf, m, r, v, i):
    """_push_small that also keeps the keys of the values (ibuf moves with vbuf)."""
    pos, m = _slot(vbuf, m, r, v)
    if pos >= 0:
        while pos > 0 and vbuf[pos - 1] > v:
            vbuf[pos], ibuf[pos] = vbuf[pos - 1], ibuf[pos - 1]
            pos -= 1
        vbuf[pos], ibuf[pos] = v, i
    return m


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _dot(a, b):
    """a.b in a fixed order: four running sums over t mod 4, then ((s0 + s1) + (s2 + s3)) and the rest.
    No fastmath: the compiler may not reorder it, so every CPU (AVX2 or AVX-512) gives the same bits,
    and the four independent sums still fill a vector unit."""
    n = a.shape[0]
    m = n - n % 4
    s0 = s1 = s2 = s3 = 0.0
    for t in range(0, m, 4):
        s0 += a[t] * b[t]
        s1 += a[t + 1] * b[t + 1]
        s2 += a[t + 2] * b[t + 2]
        s3 += a[t + 3] * b[t + 3]
    acc = (s0 + s1) + (s2 + s3)
    for t in range(m, n):
        acc += a[t] * b[t]
    return acc


@numba.njit(cache=True, nogil=True, boundscheck=False)
def suffix_cut(y, lo, hi, r, base, tail, ma, mb, mc, maxw_from, buf):
    """The smallest k >= lo such that the node (F, [k, N), r) is proved empty along the direction of
    y: base + (sum of the r smallest y[k:]) > margin(k) = ma + mb tail[k] + mc maxw_from[k].  y is
    known on [lo, hi); the keys from hi on count as r values -tail[hi] (module docstring).  Scans
    down (the value minus the margin only decreases with k); N - r + 1 ("no set fits") when none."""
    n = tail.shape[0]
    cut = n - r + 1
    m = 0
    total = 0.0
    if hi < n:
        for q in range(r):
            buf[q] = -tail[hi]
        m = r
        total = -r * tail[hi]
        if hi <= n - r:
            if base + total > ma + mb * tail[hi] + mc * maxw_from[hi]:
                cut = hi
            else:
                return cut
    for k in range(hi - 1, lo - 1, -1):
        v = y[k]
        if m < r or v < buf[r - 1]:
            if m == r:
                total -= buf[r - 1]
            m = _push_small(buf, m, r, v)
            total += v
        if m < r or k > n - r:
            continue
        if base + total > ma + mb * tail[k] + mc * maxw_from[k]:
            cut = k
        else:
            break
    return cut


@numba.njit(cache=True, nogil=True, boundscheck=False)
def forward_gram(hrow, grow, inv, tau, P, tail, lo, r, y, buf):
    """y_i = (hrow_i + grow_i) inv - tau p_i (g_F's direction, Gram form) on [lo, stop), stop the
    first key too light to enter the r smallest; returns (stop, sum of the r smallest)."""
    n = P.shape[0]
    m = 0
    stop = n
    for i in range(lo, n):
        if m == r and tail[i] <= -buf[r - 1]:
            stop = i
            break
        v = (hrow[i] + grow[i]) * inv - tau * P[i]
        y[i] = v
        m = _push_small(buf, m, r, v)
    total = 0.0
    for q in range(m):
        total += buf[q]
    return stop, total


@numba.njit(cache=True, nogil=True, boundscheck=False)
def forward_dir(V, P, u, tau, tail, lo, r, vbuf, ibuf, y):
    """y_i = p_i (u.(v_i - mu) - tau) on [lo, stop) as forward_gram, with the keys of the r smallest
    in ibuf; returns (stop, sum of the r smallest)."""
    n = P.shape[0]
    m = 0
    stop = n
    for i in range(lo, n):
        if m == r and tail[i] <= -vbuf[r - 1]:
            stop = i
            break
        v = P[i] * (_dot(V[i], u) - tau)
        y[i] = v
        m = _push_small_at(vbuf, ibuf, m, r, v, i)
    total = 0.0
    for q in range(m):
        total += vbuf[q]
    return stop, total


@numba.njit(cache=True, nogil=True, boundscheck=False)
def ascent(V, P, gF, pF, lo, r, tau, u0, iters, margin, tail, y, ibuf, vbuf, ubest, u, g):
    """Projected supergradient ascent of beta_tau(u) over unit u for the node (F, [lo, N), r), from
    u0: (the best beta found (stops early once it exceeds margin), the work spent: WORK units); its u
    is written to ubest.  u and g are scratch (d,) arrays (u may be u0 itself)."""
    d = V.shape[1]
    if u is not u0:
        u[:] = u0
    best = -np.inf
    work = 0
    for it in range(iters):
        stop, total = forward_dir(V, P, u, tau, tail, lo, r, vbuf, ibuf, y)
        work += (stop - lo) * (d + 2) + d
        beta = _dot(u, gF) - tau * pF + total
        if beta > best:
            best = beta
            ubest[:] = u
        if beta > margin:
            return best, work
        g[:] = gF  # supergradient: g_F + g_B of the minimising B
        for q in range(r):
            k = ibuf[q]
            pk = P[k]
            for t in range(d):
                g[t] += pk * V[k, t]
        work += (r + 2) * d
        ng = np.sqrt(_dot(g, g))
        if ng == 0.0:
            return best, work
        step = 1.0 / ((1.0 + it) * ng)
        for t in range(d):
            u[t] += step * g[t]
        uu = _dot(u, u)
        if uu == 0.0:  # the step cancelled u (d = 1): no direction left to try
            return best, work
        nu = 1.0 / np.sqrt(uu)
        for t in range(d):
            u[t] *= nu
    return best, work


@numba.njit(cache=True, nogil=True, boundscheck=False)
def direction_cut(V, P, gF, pF, lo, r, tau, u, tail, ma, mb, mc, maxw_from, y, ibuf, vbuf, buf):
    """suffix_cut along a unit u: (the first k >= lo from which the node (F, [k, N), r) is proved empty,
    the work spent)."""
    stop, _ = forward_dir(V, P, u, tau, tail, lo, r, vbuf, ibuf, y)
    cut = suffix_cut(y, lo, stop, r, _dot(u, gF) - tau * pF, tail, ma, mb, mc, maxw_from, buf)
    return cut, (stop - lo) * (V.shape[1] + 2)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def dfs(
    W,
    V,
    P,
    G,
    wnorm,
    maxw_from,
    tail,
    s,
    tau,
    root_cut,
    u_root,
    ascent_iters,
    budget,
    st_t,
    chosen,
    nxt,
    first,
    cut,
    gvec,
    pF,
    hF,
    sF,
    ubest,
    gn2,
):
    """Depth-first search over kept sets in mass order, resumable.

    A node at depth t holds F = chosen[:t] (ascending ranks) and takes its remaining s - t keys from
    ranks > chosen[t-1]; nxt[t] is the next child rank to try, first[t] its first, cut[t] the first
    rank no child may take.  A child is tested along g_F's direction (Gram form) and, with
    ascent_iters > 0, by supergradient ascent from its parent's best direction, which also cuts
    the child's own children; every CHAIN_EVERY children the ascent also tries to cut the node's
    remaining children at once.  The children of a node at depth s - 1 complete a set: they are
    scored in one pass in Gram form, ||g_F + w_j||^2 = ||g_F||^2 + 2 sum_F G_fj + G_jj (O(1) each),
    and a set within the Gram sums' rounding of tau is scored again from its explicit d-vector.
    tail = max_{i>=k} ||w_i|| + tau p_k.  State arrays: st_t (1,) depth, chosen (s,),
    nxt/first/cut (s+1,), gvec (s+1, d) g_F, pF (s+1,), hF (s+1, N) sum_{f in F} G[f, :],
    sF (s+1,) sum_{f in F} ||w_f||, ubest (s+1, d), gn2 (s+1,) ||g_F||^2.  Start with st_t[0] = -1.

    The search may be resumed at a lower tau (after a set at tau was found): every cut made at a
    tau holds at any lower one, so what was pruned stays pruned.

    Stops (RUNNING) once this call has spent ``budget`` work units (module docstring: WORK), so where a
    search stops depends on the work done only, never on the clock.  Returns (outcome, nodes visited
    this call, work spent this call).
    """
    n, d = W.shape
    y = np.empty(n)
    buf = np.empty(s + 1)
    ibuf = np.empty(s + 1, dtype=np.int64)
    vbuf = np.empty(s + 1)
    utmp = np.empty(d)
    u0 = np.empty(d)
    gp = np.empty(d)
    gs = np.empty(d)
    if st_t[0] < 0:  # fresh start
        st_t[0] = 0
        nxt[0] = 0
        first[0] = 0
        cut[0] = min(root_cut, n - s + 1)
        pF[0] = 0.0
        sF[0] = 0.0
        gn2[0] = 0.0
        gvec[0, :] = 0.0
        hF[0, :] = 0.0
        ubest[0, :] = u_root
    t = st_t[0]
    nodes = 0
    work = 0
    while True:
        if work >= budget:
            st_t[0] = t
            return RUNNING, nodes, work
        if t == s - 1:  # the children complete a set: one pass in Gram form
            j = nxt[t]
            end = cut[t]
            found = -1
            gnorm = np.sqrt(gn2[t])
            while j < end:
                pp = pF[t] + P[j]
                lim = tau * pp
                if gnorm - maxw_from[j] - lim > REL_MARGIN * (gnorm + lim + maxw_from[j]):
                    break  # ||g_F + w_i|| >= ||g_F|| - ||w_i||: no key from j on completes a set at tau
                val = gn2[t] + 2.0 * hF[t, j] + wnorm[j] * wnorm[j]
                sw = sF[t] + wnorm[j]
                if val <= lim * lim + GRAM_MARGIN * sw * sw:
                    acc = 0.0
                    for q in range(d):
                        x = gvec[t, q] + W[j, q]
                        acc += x * x
                    work += 2 * d
                    if np.sqrt(acc) <= lim:
                        found = j
                        break
                j += 1
            work += LEAF_WORK * (j - nxt[t] + 1)
            nodes += j - nxt[t] + (1 if found >= 0 else 0)
            if found >= 0:
                chosen[t] = found
                nxt[t] = found + 1
                st_t[0] = t
                return FOUND, nodes, work
            nxt[t] = end
        if nxt[t] >= cut[t]:
            if t == 0:
                st_t[0] = 0
                return INFEASIBLE, nodes, work
            t -= 1
            continue
        j = nxt[t]
        if ascent_iters > 0 and j > first[t] and (j - first[t]) % CHAIN_EVERY == 0:
            rc = s - t  # the node (F, [j, N), s - t): every remaining child at once
            gt = gvec[t]
            margin = REL_MARGIN * (np.sqrt(gn2[t]) + tau * pF[t] + rc * tail[j])
            nodes += 1
            beta, spent = ascent(
                V, P, gt, pF[t], j, rc, tau, ubest[t], ascent_iters, margin, tail, y, ibuf, vbuf, utmp, u0, gs
            )
            work += spent
            if beta > margin:
                cut[t] = j
                continue
            ubest[t, :] = utmp
        nxt[t] += 1
        nodes += 1
        work += NODE_WORK
        r = s - t - 1  # keys still to take after j (>= 1: depth s - 1 is handled above)
        for q in range(d):
            gp[q] = gvec[t, q] + W[j, q]
        pp = pF[t] + P[j]
        g2 = _dot(gp, gp)
        ng = np.sqrt(g2)
        chosen[t] = j
        if n - (j + 1) < r:
            cut[t] = j  # no larger rank leaves room either
            continue
        sp = sF[t] + wnorm[j]
        inv = 1.0 / ng if ng > 0.0 else 0.0
        ma = REL_MARGIN * (ng + tau * pp)
        mb = REL_MARGIN * r
        mc = GRAM_MARGIN * r * sp * inv
        c = n - r + 1
        if ng > 0.0:  # g_F''s direction: the child and the chain of nodes (F', [k, N))
            stop, _ = forward_gram(hF[t], G[j], inv, tau, P, tail, j + 1, r, y, buf)
            work += GRAM_WORK * (stop - j - 1)
            c = suffix_cut(y, j + 1, stop, r, ng - tau * pp, tail, ma, mb, mc, maxw_from, buf)
            if c <= j + 1:
                continue  # the child is empty
        if ascent_iters > 0 and r >= 2:  # r = 1: the child's one pass over its sets is exact and cheaper
            if t == 0 and ng > 0.0:
                for q in range(d):
                    u0[q] = gp[q] * inv
            else:
                u0[:] = ubest[t]
            margin = ma + mb * tail[j + 1] + mc * maxw_from[j + 1]
            beta, spent = ascent(
                V, P, gp, pp, j + 1, r, tau, u0, ascent_iters, margin, tail, y, ibuf, vbuf, utmp, u0, gs
            )
            work += spent
            if beta > margin:
                continue
            cd, spent = direction_cut(
                V, P, gp, pp, j + 1, r, tau, utmp, tail, ma, mb, mc, maxw_from, y, ibuf, vbuf, buf
            )
            work += spent
            c = min(c, cd)
            if c <= j + 1:
                continue
        else:
            for q in range(d):
                utmp[q] = gp[q] * inv
        t += 1
        gvec[t] = gp
        gn2[t] = g2
        pF[t] = pp
        sF[t] = sp
        for i in range(j + 1, n):
            hF[t, i] = hF[t - 1, i] + G[j, i]
        work += n - j - 1
        ubest[t, :] = utmp
        nxt[t] = j + 1
        first[t] = j + 1
        cut[t] = c


@numba.njit(cache=True, nogil=True, boundscheck=False)
def swap_descent(G, P, A, max_rounds):
    """Best-improvement swaps (one key out, one in) over all keys from the set A (ranks, modified in
    place) on the Gram form es^2 = sum_{a,b in A} G_ab / p(A)^2; returns (the final Gram value of
    es, the rounds run: each costs s N WORK units)."""
    n = P.shape[0]
    s = A.shape[0]
    inA = np.zeros(n, dtype=np.bool_)
    diag = np.empty(n)
    for j in range(n):
        diag[j] = G[j, j]
    row = np.zeros(n)  # sum_{a in A} G[a, :]
    pa = 0.0
    for a in A:
        inA[a] = True
        pa += P[a]
        for j in range(n):
            row[j] += G[a, j]
    gg = 0.0
    for a in A:
        gg += row[a]
    cur = max(gg, 0.0) / (pa * pa)
    rounds = 0
    for _ in range(max_rounds):
        rounds += 1
        best, bi, bj = cur, -1, -1
        for q in range(s):
            a = A[q]
            base = gg - 2.0 * row[a] + diag[a]
            pb = pa - P[a]
            Ga = G[a]
            for j in range(n):
                if inA[j]:
                    continue
                val = base + 2.0 * (row[j] - Ga[j]) + diag[j]
                pm = pb + P[j]
                val = max(val, 0.0) / (pm * pm)
                if val < best:
                    best, bi, bj = val, q, j
        if bi < 0 or best >= cur * (1.0 - 1e-12):
            break
        a = A[bi]
        gg = gg - 2.0 * row[a] + diag[a] + 2.0 * (row[bj] - G[a, bj]) + diag[bj]
        for j in range(n):
            row[j] += G[bj, j] - G[a, j]
        pa = pa - P[a] + P[bj]
        inA[a] = False
        inA[bj] = True
        A[bi] = bj
        cur = max(gg, 0.0) / (pa * pa)
    return np.sqrt(cur), rounds
