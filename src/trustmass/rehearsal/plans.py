"""The plans the rehearsal runs: the paper's configurations, each with the one override file over them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["OVERRIDE", "PLANS", "REPO", "config_files", "paper_files"]

REPO = Path(__file__).resolve().parents[3]
#: the one override file: lengths, document and item counts, SCIP limits (docs/rehearsal.md)
OVERRIDE = "config/rehearsal.yaml"
#: plan name -> the paper's configuration files it merges over config.yaml, in order (the two runs a cluster
#: makes: the ten arms with the deployment grid, and the content run of Table 2)
PLANS = {
    "paper-deploy": ("config/paper.yaml", "config/paper-deploy.yaml"),
    "paper-content": ("config/paper.yaml", "config/paper-content.yaml"),
}


def paper_files(plan: str, repo: Path = REPO) -> list[Path]:
    """The paper's own files of ``plan`` (what a cluster run passes to --configfile)."""
    return [repo / f for f in PLANS[plan]]


def config_files(plan: str, repo: Path = REPO) -> list[Path]:
    """The rehearsal's files of ``plan``: the paper's, then the override."""
    return [*paper_files(plan, repo), repo / OVERRIDE]
