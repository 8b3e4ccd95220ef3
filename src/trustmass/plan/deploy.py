"""The deployment stage's jobs and targets (a mixin of :class:`trustmass.plan.study.Study`)."""

from __future__ import annotations

from trustmass.plan import layout

__all__ = ["DeployTargets", "benchmark_files"]


def benchmark_files(bench: dict) -> list[str]:
    """A deploy.benchmarks entry's local data files (one per task when its path holds ``{task}``; none from the hub)."""
    path = str(bench.get("path", ""))
    if path.startswith("hub:"):
        return []
    return [path.format(task=t) for t in bench.get("tasks") or ()] if "{task}" in path else [path]


class DeployTargets:
    """Methods of :class:`~trustmass.plan.study.Study` for the deployment stage."""

    def deploy_models(self) -> list[str]:
        """deploy.models, or the headline families (none when the stage is off)."""
        deploy = self.config["deploy"]
        return list(deploy["models"] or self.headline.models) if deploy["enabled"] else []

    def deploy_haystack(self) -> str:
        """The corpus text the retrieval contexts are cut from (deploy.haystack, else the headline corpus)."""
        return layout.CORPUS_TEXT.format(corpus=self.config["deploy"]["haystack"] or self.headline.corpus)

    def deploy_jobs(self) -> list[tuple[str, int]]:
        """(task, length) of every job per model: the synthetic tasks at each length, each benchmark at its max_length."""
        d = self.config["deploy"]
        return [(t, n) for t in d["tasks"] for n in d["lengths"]] + [
            (b["name"], b["max_length"]) for b in d["benchmarks"]
        ]

    def deploy_outputs(self) -> list[str]:
        """Every (model, task, length) job's rows."""
        jobs = self.deploy_jobs()
        return [layout.DEPLOY_ROWS.format(model=m, task=t, length=n) for m in self.deploy_models() for t, n in jobs]

    def replay_outputs(self) -> list[str]:
        """Each deployed model's prefill-only byte replay (none when deploy.replay.methods is empty)."""
        if not self.config["deploy"]["replay"]["methods"]:
            return []
        return [layout.DEPLOY_REPLAY.format(model=m) for m in self.deploy_models()]

    def benchmark_data(self, name: str) -> list[str]:
        """A deploy.benchmarks entry's local data files, as inputs (none for a synthetic task or hub data)."""
        bench = next((b for b in self.config["deploy"]["benchmarks"] if b["name"] == name), None)
        return [] if bench is None else benchmark_files(bench)
