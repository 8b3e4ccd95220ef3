"""Did every rule of the paper's plans run?  The rules planned (the forced DAG of the paper's own files, per plan)
against the rules whose jobs snakemake reports finished in the rehearsal's working directories (every
``Finished jobid: N (Rule: R)`` line of their ``.snakemake/log``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from trustmass.rehearsal.plans import PLANS, REPO, paper_files
from trustmass.rehearsal.run import WORKDIR

__all__ = ["check", "finished_jobs"]

_FINISHED = re.compile(r"^Finished jobid: \d+ \(Rule: ([A-Za-z0-9_]+)\)", re.MULTILINE)


def finished_jobs(workdir: Path) -> Counter:
    """Jobs per rule that snakemake reported finished in ``workdir`` (every run's log)."""
    found: Counter = Counter()
    for log in sorted((Path(workdir) / ".snakemake" / "log").glob("*.snakemake.log")):
        found.update(_FINISHED.findall(log.read_text(encoding="utf-8", errors="replace")))
    return found


def check(root: Path, plans: Iterable[str] = tuple(PLANS), repo: Path = REPO) -> tuple[bool, str]:
    """(every rule the paper's configurations plan finished at least one job in the rehearsal, the table).  Rules
    outside the paper's DAG (a named target asked for while debugging, ``-- records``) are listed, not counted: the
    rehearsal's own DAG has no rule the paper's lacks (tests/workflow/test_rehearsal.py)."""
    from trustmass.rehearsal.dag import planned_jobs

    paper: Counter = Counter()
    for plan in plans:
        paper.update(Counter(j["rule"] for j in planned_jobs(paper_files(plan, repo))))
    done = finished_jobs(Path(root) / WORKDIR)
    lines = [f"{'rule':<40} {'paper jobs':>10} {'finished':>9}"]
    for rule in sorted(set(paper) | set(done)):
        mark = "" if (rule in paper) == (rule in done) else ("  NOT RUN" if rule in paper else "  (a named target)")
        lines.append(f"{rule:<40} {paper[rule]:>10} {done[rule]:>9}{mark}")
    planned, executed = sorted(paper), sorted(r for r in done if r in paper)
    equal = planned == executed
    lines.append(
        f"rules planned by the paper's configurations: {len(planned)}; rules executed: {len(executed)}; "
        + ("equal" if equal else "NOT equal")
    )
    if not equal:
        lines.append(f"  planned, not executed: {sorted(set(planned) - set(executed))}")
    return equal, "\n".join(lines)
