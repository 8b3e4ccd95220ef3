"""`python -m trustmass.bench <name> [--key value ...]`: run a benchmark, print its JSON."""

import os
import sys

#: benchmarks that parse their own command line (everything after the name is theirs) and keep the
#: machine's thread settings (the GPU check: its host-side work and child pytest use every core)
OWN_OPTIONS = ("gpu",)

if not (len(sys.argv) > 1 and sys.argv[1] in OWN_OPTIONS):
    # one core: keep BLAS from spreading the (tiny) matrix products over threads
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(var, "1")

import argparse  # noqa: E402
import json  # noqa: E402

BENCHMARKS = {
    "enumeration": "trustmass.bench.enumeration",
    "capture": "trustmass.bench.capture",
    "kernels": "trustmass.bench.kernels",
    "certify": "trustmass.bench.certify",
    "restricted": "trustmass.bench.restricted",
    "deploy": "trustmass.bench.deploy",
    "gpu": "trustmass.bench.gpu",  # its own options: python -m trustmass.bench gpu --help
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in OWN_OPTIONS:
        import importlib

        return importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m trustmass.bench", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHMARKS))
    parser.add_argument("--n-keys", type=int, default=4096)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-dir", help="capture: a Hugging Face model folder (default: random SmolLM2 shapes)")
    parser.add_argument(
        "--shard",
        action="append",
        help="certify: draw the rows from this capture shard (default: the ceiling records); --compare: repeatable",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="certify: the paper's SCIP bisection and the branch-and-bound certifier on the same manifest rows",
    )
    parser.add_argument(
        "--paper-time-limit",
        type=float,
        help="certify --compare: the paper protocol's safety net, seconds per SCIP solve (default 120)",
    )
    parser.add_argument(
        "--work",
        type=int,
        help="certify --compare: bnb's work budget per probe, millions of units (default 60000: today's 60 s)",
    )
    parser.add_argument("--scip-nodes", type=int, help="certify --compare: the paper protocol's SCIP nodes per solve")
    parser.add_argument(
        "--scip-lp-iterations", type=int, help="certify --compare: the paper protocol's LP iterations per solve"
    )
    parser.add_argument(
        "--per-stratum", type=int, help="certify --compare: manifest rows per (model, budget, decile) (default 1)"
    )
    parser.add_argument(
        "--deciles", type=int, help="certify --compare: dropped-mass strata per (model, budget) (default 10)"
    )
    parser.add_argument("--certifiers", help="certify --compare: comma-separated subset of paper,bnb (default both)")
    parser.add_argument("--capture", help="certify: capture a long shard to this path first (--model-dir, --documents)")
    parser.add_argument(
        "--documents",
        help="certify --capture: the tokenized document set (resources/documents/<model>/<corpus>.safetensors)",
    )
    parser.add_argument(
        "--min-keys", type=int, default=0, help="certify --shard: only rows with at least this many keys"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        help="certify: seconds per SCIP solve (default: the benchmark's 10 s); --compare: bnb's safety net per probe",
    )
    parser.add_argument("--budgets", help="certify: comma-separated budgets (default: 4,8,16,32)")
    parser.add_argument("--budget", type=int, help="deploy: kept entries per KV head (default 64)")
    parser.add_argument("--continuation", type=int, help="restricted: restricted rows (default: the benchmark's 128)")
    parser.add_argument(
        "--repeats", type=int, help="restricted, capture: timed calls per measurement (median; default 3 and 2)"
    )
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args(argv)
    import importlib
    import inspect

    module = importlib.import_module(BENCHMARKS[args.name])
    given = {"n_keys": args.n_keys, "head_dim": args.head_dim, "instances": args.instances, "seed": args.seed}
    given["model_dir"] = args.model_dir
    shards = list(args.shard or [])
    captured = None
    if args.capture:  # certify: the long capture first, then the benchmark on it (see bench.long_capture)
        if not (args.model_dir and args.documents):
            parser.error("--capture needs --model-dir and --documents")
        from trustmass.bench.long_capture import capture_concatenated

        captured = capture_concatenated(args.model_dir, args.documents, args.capture)
        shards.append(args.capture)
    given["shard"], given["min_keys"] = (shards[0] if len(shards) == 1 else shards or None), args.min_keys
    given["compare"] = args.compare
    for name in ("paper_time_limit", "per_stratum", "work", "scip_nodes", "scip_lp_iterations"):
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
    if args.deciles is not None:
        given["n_deciles"] = args.deciles
    if args.certifiers:
        given["certifiers"] = tuple(args.certifiers.split(","))
    if args.time_limit is not None:
        given["time_limit"] = args.time_limit
    for name in ("budget", "continuation", "repeats"):
        if getattr(args, name) is not None:
            given[name] = getattr(args, name)
    if args.budgets:
        given["budgets"] = tuple(int(b) for b in args.budgets.split(","))
    given["print_json"] = False  # printed once, below
    accepted = inspect.signature(module.run).parameters
    result = module.run(**{k: v for k, v in given.items() if k in accepted})
    if captured is not None and isinstance(result, dict):
        result = {**result, "capture": captured}
    text = json.dumps(result, indent=2)
    print(text)
    if isinstance(result, dict) and "table" in result:  # certify --compare: the per-budget table, readable
        print(result["table"])
        if result.get("curve_table"):  # certify --compare: bnb's budget -> gap curve
            print(result["curve_table"])
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
