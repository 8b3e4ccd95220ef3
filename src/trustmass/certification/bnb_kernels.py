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
"""

from __future__ import annotations

import numba
import numpy as np

#: outcomes of `dfs` (the search state is kept in its arrays, so RUNNING resumes)
INFEASIBLE = 0  # every set proved to have es > tau
FOUND = 1  # a leaf with es <= tau (its ranks in chosen[:s]); resumable
RUNNING = 2  # node budget spent; resumable

REL_MARGIN = 1e-9
#: children between two attempts to cut all of a node's remaining children
CHAIN_EVERY = 8
GRAM_MARGIN = 1e-12


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _push_small(buf, m, r, v):
    """Keep the r smallest values seen in buf[:m] ascending; returns the new m."""
    if m < r:
        pos = m
        m += 1
    elif v < buf[r - 1]:
        pos = r - 1
    else:
        return m
    while pos > 0 and buf[pos - 1] > v:
        buf[pos] = buf[pos - 1]
        pos -= 1
    buf[pos] = v
    return m


@numba.njit(cache=True, nogil=True, boundscheck=False)
def suffix_cut(y, lo, r, base, margin_of_k, buf):
    """The smallest k >= lo such that base + (sum of the r smallest y[k:]) > margin_of_k[k], scanning
    down from the end (the value only decreases as k does); len(y) - r + 1 when no k qualifies,
    where len(y) - r + 1 itself means "no set fits"."""
    n = y.shape[0]
    m = 0
    total = 0.0
    cut = n - r + 1
    for k in range(n - 1, lo - 1, -1):
        if m == r and y[k] >= buf[r - 1]:
            pass  # the r smallest of y[k:] are those of y[k+1:]
        else:
            if m == r:
                total -= buf[r - 1]
            m = _push_small(buf, m, r, y[k])
            total += y[k]
        if m < r:
            continue
        if base + total > margin_of_k[k]:
            cut = k
        else:
            break
    return cut


@numba.njit(cache=True, nogil=True, boundscheck=False)
def ascent(V, P, gF, pF, lo, r, tau, u0, iters, margin, ibuf, vbuf, ubest):
    """Projected supergradient ascent of beta_tau(u) over unit u for the node (F, [lo, N), r), from
    u0: the best beta found (stops early once it exceeds margin), its u written to ubest.
    O((N - lo) d) per iteration."""
    n, d = V.shape
    u = u0.copy()
    best = -np.inf
    for it in range(iters):
        ug = 0.0
        for t in range(d):
            ug += u[t] * gF[t]
        m = 0
        for i in range(lo, n):
            acc = 0.0
            for t in range(d):
                acc += V[i, t] * u[t]
            v = P[i] * (acc - tau)
            if m < r or v < vbuf[r - 1]:  # keep the r smallest with their keys
                pos = m if m < r else r - 1
                if m < r:
                    m += 1
                while pos > 0 and vbuf[pos - 1] > v:
                    vbuf[pos] = vbuf[pos - 1]
                    ibuf[pos] = ibuf[pos - 1]
                    pos -= 1
                vbuf[pos] = v
                ibuf[pos] = i
        beta = ug - tau * pF
        for q in range(r):
            beta += vbuf[q]
        if beta > best:
            best = beta
            ubest[:] = u
        if beta > margin:
            return best
        g = gF.copy()  # supergradient: g_F + g_B of the minimising B
        for q in range(r):
            g += P[ibuf[q]] * V[ibuf[q]]
        ng = np.sqrt((g * g).sum())
        if ng == 0.0:
            return best
        u = u + (1.0 / (1.0 + it)) * g / ng
        u = u / np.sqrt((u * u).sum())
    return best


@numba.njit(cache=True, nogil=True, boundscheck=False)
def direction_cut(V, P, gF, pF, lo, r, tau, u, margin_of_k, y, buf):
    """suffix_cut along a unit u: the first k >= lo from which the node (F, [k, N), r) is proved empty."""
    n, d = V.shape
    ug = 0.0
    for t in range(d):
        ug += u[t] * gF[t]
    for i in range(lo, n):
        acc = 0.0
        for t in range(d):
            acc += V[i, t] * u[t]
        y[i] = P[i] * (acc - tau)
    return suffix_cut(y, lo, r, ug - tau * pF, margin_of_k, buf)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def dfs(W, V, P, G, wnorm, maxw_from, s, tau, root_cut, u_root, ascent_iters, budget,
        st_t, chosen, nxt, first, cut, gvec, pF, hF, sF, ubest):  # fmt: skip
    """Depth-first search over kept sets in mass order, resumable.

    A node at depth t holds F = chosen[:t] (ascending ranks) and takes its remaining s - t keys from
    ranks > chosen[t-1]; nxt[t] is the next child rank to try, first[t] its first, cut[t] the first
    rank no child may take.  A child is tested along g_F's direction (Gram form) and, with
    ascent_iters > 0, by supergradient ascent from its parent's best direction, which also cuts
    the child's own children; every CHAIN_EVERY children the ascent also tries to cut the node's
    remaining children at once.  State arrays: st_t (1,) depth, chosen (s,), nxt/first/cut (s+1,),
    gvec (s+1, d) g_F, pF (s+1,), hF (s+1, N) sum_{f in F} G[f, :], sF (s+1,) sum_{f in F} ||w_f||,
    ubest (s+1, d).  Start with st_t[0] = -1.  Returns (outcome, nodes visited this call).
    """
    n, d = W.shape
    y = np.empty(n)
    mk = np.empty(n)
    buf = np.empty(s + 1)
    ibuf = np.empty(s + 1, dtype=np.int64)
    vbuf = np.empty(s + 1)
    utmp = np.empty(d)
    if st_t[0] < 0:  # fresh start
        st_t[0] = 0
        nxt[0] = 0
        first[0] = 0
        cut[0] = min(root_cut, n - s + 1)
        pF[0] = 0.0
        sF[0] = 0.0
        gvec[0, :] = 0.0
        hF[0, :] = 0.0
        ubest[0, :] = u_root
    t = st_t[0]
    nodes = 0
    while True:
        if nodes >= budget:
            st_t[0] = t
            return RUNNING, nodes
        if nxt[t] >= cut[t]:
            if t == 0:
                st_t[0] = 0
                return INFEASIBLE, nodes
            t -= 1
            continue
        j = nxt[t]
        if ascent_iters > 0 and j > first[t] and (j - first[t]) % CHAIN_EVERY == 0:
            rc = s - t  # the node (F, [j, N), s - t): every remaining child at once
            gt = gvec[t]
            margin = REL_MARGIN * (np.sqrt((gt * gt).sum()) + tau * pF[t] + rc * (maxw_from[j] + tau * P[j]))
            nodes += 1
            if ascent(V, P, gt, pF[t], j, rc, tau, ubest[t], ascent_iters, margin, ibuf, vbuf, utmp) > margin:
                cut[t] = j
                continue
            ubest[t, :] = utmp
        nxt[t] += 1
        nodes += 1
        r = s - t - 1  # keys still to take after j
        gp = gvec[t] + W[j]
        pp = pF[t] + P[j]
        ng = np.sqrt((gp * gp).sum())
        chosen[t] = j
        if r == 0:
            if ng <= tau * pp:
                st_t[0] = t
                return FOUND, nodes
            continue
        if n - (j + 1) < r:
            cut[t] = j  # no larger rank leaves room either
            continue
        sp = sF[t] + wnorm[j]
        inv = 1.0 / ng if ng > 0.0 else 0.0
        for i in range(j + 1, n):
            mk[i] = REL_MARGIN * (ng + tau * pp + r * (maxw_from[i] + tau * P[i])) + GRAM_MARGIN * r * sp * maxw_from[i] * inv
        c = n - r + 1
        if ng > 0.0:
            # direction g_F': y_i = u.w_i - tau p_i for i > j, and the chain of nodes (F', [k, N))
            for i in range(j + 1, n):
                y[i] = (hF[t, i] + G[j, i]) * inv - tau * P[i]
            c = suffix_cut(y, j + 1, r, ng - tau * pp, mk, buf)
            if c <= j + 1:
                continue  # the child is empty
        if ascent_iters > 0:
            if t == 0 and ng > 0.0:
                u0 = gp * inv
            else:
                u0 = ubest[t].copy()
            if ascent(V, P, gp, pp, j + 1, r, tau, u0, ascent_iters, mk[j + 1], ibuf, vbuf, utmp) > mk[j + 1]:
                continue
            c = min(c, direction_cut(V, P, gp, pp, j + 1, r, tau, utmp, mk, y, buf))
            if c <= j + 1:
                continue
        else:
            utmp[:] = gp * inv
        t += 1
        gvec[t] = gp
        pF[t] = pp
        sF[t] = sp
        for i in range(j + 1, n):
            hF[t, i] = hF[t - 1, i] + G[j, i]
        ubest[t, :] = utmp
        nxt[t] = j + 1
        first[t] = j + 1
        cut[t] = c


@numba.njit(cache=True, nogil=True, boundscheck=False)
def swap_descent(G, P, A, max_rounds):
    """Best-improvement swaps (one key out, one in) over all keys from the set A (ranks, modified in
    place) on the Gram form es^2 = sum_{a,b in A} G_ab / p(A)^2; returns the final Gram value of es."""
    n = P.shape[0]
    s = A.shape[0]
    inA = np.zeros(n, dtype=np.bool_)
    row = np.zeros(n)  # sum_{a in A} G[a, :]
    pa = 0.0
    for a in A:
        inA[a] = True
        pa += P[a]
        row += G[a]
    gg = 0.0
    for a in A:
        gg += row[a]
    cur = max(gg, 0.0) / (pa * pa)
    for _ in range(max_rounds):
        best, bi, bj = cur, -1, -1
        for q in range(s):
            a = A[q]
            base = gg - 2.0 * row[a] + G[a, a]
            pb = pa - P[a]
            for j in range(n):
                if inA[j]:
                    continue
                val = base + 2.0 * (row[j] - G[a, j]) + G[j, j]
                pm = pb + P[j]
                val = max(val, 0.0) / (pm * pm)
                if val < best:
                    best, bi, bj = val, q, j
        if bi < 0 or best >= cur * (1.0 - 1e-12):
            break
        a = A[bi]
        gg = gg - 2.0 * row[a] + G[a, a] + 2.0 * (row[bj] - G[a, bj]) + G[bj, bj]
        row += G[bj] - G[a]
        pa = pa - P[a] + P[bj]
        inA[a] = False
        inA[bj] = True
        A[bi] = bj
        cur = max(gg, 0.0) / (pa * pa)
    return np.sqrt(cur)
