"""Certify pickled rows (`rows.py`) with the branch-and-bound certifier, one JSON line per row; resumes.

    # the current code, a work budget: W units per probe, 2 W per instance (as `bench certify --compare
    # --work W/1e6` does), the seconds only a safety net (900 s per probe)
    PYTHONPATH=src python benchmarks/certify/run_bnb.py frontier40.pkl frontier.jsonl --work 1e11

    # the code before work budgets (3a4c3b6, main before them): seconds per probe, read as CPU seconds of
    # this process (time.perf_counter patched to time.process_time) so that a busy neighbour does not count
    PYTHONPATH=/path/to/3a4c3b6/src python benchmarks/certify/run_bnb.py frontier40.pkl old.jsonl --seconds 60

`--rows 32,33` certifies only those rows.  Each line: row, model, layer, head, s, decile, n, status, es_pool,
es_cert, lower, gap ((es_cert - lower) / es_cert), cpu_s, wall_s, work and the solves as
(tau / es_pool, outcome, solver, work, nodes, seconds) -- the current code's; the old code has no work counter
and writes (tau / es_pool, outcome, seconds).  One process, one core: run nothing else CPU-heavy beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time

parser = argparse.ArgumentParser()
parser.add_argument("rows")
parser.add_argument("out")
parser.add_argument("--work", type=float, help="work units per probe (the current code)")
parser.add_argument("--seconds", type=float, help="CPU seconds per probe (the code before work budgets)")
parser.add_argument("--rows", dest="which", help="comma-separated row numbers (default: all)")
args = parser.parse_args()
if args.seconds is not None:
    time.perf_counter = time.process_time  # the old code's clock: CPU seconds of this process

from trustmass.certification import bnb  # noqa: E402 -- after the clock patch
from trustmass.core.operator import Instance  # noqa: E402

with open(args.rows, "rb") as f:
    data = pickle.load(f)
which = [int(x) for x in args.which.split(",")] if args.which else range(len(data))
done = set()
if os.path.exists(args.out):
    with open(args.out) as f:
        done = {json.loads(line)["row"] for line in f}
bnb.warm_up()
for i in which:
    if i in done:
        continue
    d = data[i]
    inst = Instance.from_arrays(d["p"], d["v"])
    t0, w0 = time.process_time(), time.perf_counter()
    if args.seconds is not None:
        c = bnb.certify_bnb(inst, d["s"], d["kept"], d["es_pool"], time_limit=args.seconds)
        solves = [(r.tau / d["es_pool"], r.outcome, round(r.seconds, 2)) for r in c.solves]
    else:
        W = int(args.work)
        c = bnb.certify_bnb(inst, d["s"], d["kept"], d["es_pool"], work_limit=W, total_work_limit=2 * W, time_limit=900)
        solves = [
            (r.tau / d["es_pool"], r.outcome, r.scip_status, r.work, r.nodes, round(r.seconds, 3)) for r in c.solves
        ]
    cpu = time.process_time() - t0
    m = d["meta"]
    rec = dict(
        row=i,
        model=m["model"],
        layer=m["layer"],
        head=m["head"],
        s=d["s"],
        decile=m["decile"],
        n=inst.n_keys,
        status=c.status,
        es_pool=d["es_pool"],
        es_cert=c.es_cert,
        lower=c.lower_bound,
        gap=(c.es_cert - c.lower_bound) / c.es_cert if c.es_cert > 0 else 0.0,
        cpu_s=cpu,
        wall_s=time.perf_counter() - w0,
        work=getattr(c, "work", None),
        solves=solves,
    )
    with open(args.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(
        i,
        m["model"],
        d["s"],
        c.status,
        f"gap {rec['gap']:.4f}",
        f"cert/pool {c.es_cert / d['es_pool']:.4f}",
        f"cpu {cpu:.1f}",
    )
