"""The reporting layer's switches (a mixin of :class:`trustmass.plan.study.Study`): which statistics rules a
configuration runs and which stages' claims it can answer."""

from __future__ import annotations

import os

__all__ = ["ReportTargets"]

#: the claims file's stages produced whatever the configuration (the rest depend on switches below)
ALWAYS = ("THY", "CAP", "INST", "STAT", "CERT", "AUD", "LOSS")
#: stage codes of the claims file -> the config switch that produces them
SWITCHED = {
    "TASK": "task_contexts/enabled",
    "PROBE": "loss/probe/enabled",
    "CURV": "loss/curvature/enabled",
    "DEP": "deploy/enabled",
    "BYTES": "deploy/enabled",
    "RETR": "deploy/enabled",
    "TIME": "deploy/enabled",
}


class ReportTargets:
    """Methods of :class:`~trustmass.plan.study.Study` for the reporting layer."""

    def switch(self, path: str) -> bool:
        """A config switch given as ``section/key`` (e.g. ``deploy/enabled``)."""
        value = self.config
        for key in path.split("/"):
            value = value[key]
        return bool(value)

    def produced_stages(self) -> list[str]:
        """The claims file's stages whose results this configuration produces (the rest are "not produced")."""
        return [*ALWAYS, *(stage for stage, path in SWITCHED.items() if self.switch(path))]

    def statistics_enabled(self, entry, repository: str | os.PathLike) -> bool:
        """Does a statistics rule of the catalog run?  Its ``when`` is a config switch that is on, or
        ``file:<path>``, a file committed to the repository (e.g. the GPU check)."""
        if entry.when is None:
            return True
        if entry.when.startswith("file:"):
            return os.path.isfile(os.path.join(repository, entry.when.removeprefix("file:")))
        return self.switch(entry.when)

    def corpus_contents(self) -> dict[str, str | None]:
        """Each corpus's declared ``content`` (prose, code, ...): Table 2 groups by it."""
        return {name: (entry or {}).get("content") for name, entry in (self.config.get("corpora") or {}).items()}

    def cache_dir(self) -> str:
        """Where downloads are kept (``cache_dir``, else :data:`trustmass.plan.layout.CACHE_DIR`)."""
        from trustmass.plan.layout import CACHE_DIR

        return self.config.get("cache_dir") or CACHE_DIR
