"""What a SCIP solve of the paper's protocol does in its seconds on frontier rows (`rows.py`): the calibration
of certification.scip_nodes / scip_lp_iterations (config/paper.yaml) against the paper's 120 s per solve.

    PYTHONPATH=src python benchmarks/certify/scip_cal.py frontier40.pkl scip_cal.jsonl 120 3,9,27,36,16

Per row, the protocol's two probes (tau = FIRST_PROBE and MATERIAL times ES_pool), each `misocp._solve` as
`misocp.certify` runs it (a forked child, the light-mass split where its bound applies, no node / LP limit,
the seconds limit only): outcome, SCIP status, nodes, LP iterations, seconds, one JSON line each.

    PYTHONPATH=src python benchmarks/certify/scip_cal.py frontier40.pkl - 20 3 --stats stats.txt

instead solves the first probe of one row in this process and writes SCIP's statistics (where the seconds went).
"""

from __future__ import annotations

import json
import math
import pickle
import sys

from trustmass.certification import misocp as M
from trustmass.core.operator import Instance


def main(argv: list[str]) -> None:
    rows, out, seconds, which, *rest = argv
    with open(rows, "rb") as f:
        data = pickle.load(f)
    T = float(seconds)
    for i in [int(x) for x in which.split(",")]:
        d = data[i]
        inst, s, z0 = Instance.from_arrays(d["p"], d["v"]), d["s"], d["kept"]
        floor = M.MASS_FLOOR_REL * float(inst.p[z0].sum())
        b_low = M.low_mass_bound(inst, floor * (1 + s * M.FLOOR_EPS))
        opts = M.SolverOptions(time_limit=T, memory_limit_mb=8192.0)
        if rest and rest[0] == "--stats":
            _stats(inst, s, M.FIRST_PROBE * d["es_pool"], z0, opts, rest[1])
            continue
        for factor in (M.FIRST_PROBE, M.MATERIAL):
            tau = factor * d["es_pool"]
            split = math.isfinite(b_low) and b_low > tau
            rec, _ = M._solve(inst, s, tau, z0, opts, floor if split else 0.0, True)
            line = dict(row=i, s=s, factor=factor, outcome=rec.outcome, scip=rec.scip_status, nodes=rec.nodes)
            line.update(lp=rec.work, sec=rec.seconds, split=split)
            with open(out, "a") as f:
                f.write(json.dumps(line) + "\n")
            print(line, flush=True)


def _stats(inst, s: int, tau: float, z0, opts, path: str) -> None:
    """The program of `misocp.solve_feasibility` (no split), solved here, SCIP's statistics to `path`."""
    import pyscipopt as ps

    c = M._scale(inst, z0)
    Wt = inst.w / c
    m, z, y = M._build(inst, s, Wt, opts)
    t = m.addVar(lb=0.0, ub=None, name="t")
    pt = inst.p * (tau / c)
    m.addCons(t - ps.quicksum(float(pt[j]) * z[j] for j in range(len(z))) == 0)
    M._cone(m, y, t, opts.cone)
    M._add_start(m, z, y, [(t, float(pt[z0].sum()))], Wt, z0)
    m.optimize()
    print(m.getStatus(), m.getNTotalNodes(), m.getNLPIterations(), m.getSolvingTime())
    m.writeStatistics(path)


if __name__ == "__main__":
    main(sys.argv[1:])
