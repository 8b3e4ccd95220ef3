"""The statistics rules are generated from the catalog: every entry names a function of the one shape
``statistics(inputs, config) -> Frames`` that returns exactly the frames the entry declares, and the one
script (scripts/statistics.py) writes them and their sidecars."""

import inspect
import json
import pkgutil
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from unit.test_ceiling_frames import frame, study_rows
from unit.test_gpu_claims import CHECK

from trustmass.report import frames as frames_package
from trustmass.report.catalog import STATISTICS, StatisticsRule, statistics_rule, stats_path
from trustmass.report.frames import gpu
from trustmass.report.statistics import compute, function_of

REPO = Path(__file__).resolve().parents[2]
CONFIG = {
    "seed": 0,
    "labels": {"kappa_threshold": 1.11},
    "statistics": {"bootstrap": 0},
    "study": {"models": ["a", "b"], "corpora": ["wikitext"]},
}


@pytest.mark.parametrize("entry", STATISTICS, ids=[e.name for e in STATISTICS])
def test_every_entry_names_a_function_of_the_one_shape(entry):
    assert list(inspect.signature(function_of(entry)).parameters) == ["inputs", "config"]
    assert entry.inputs and "code" not in entry.inputs  # the code inputs are the workflow's
    assert set(entry.config) >= {"seed"} and entry.mem_mb > 0 and entry.runtime > 0
    assert entry.when is None or entry.when.startswith("file:") or entry.when.count("/") == 1


def test_the_frames_a_rule_writes_are_declared_once_in_the_catalog():
    assert len({e.name for e in STATISTICS}) == len(STATISTICS)
    for info in pkgutil.iter_modules(frames_package.__path__):
        module = __import__(f"trustmass.report.frames.{info.name}", fromlist=["_"])
        assert not [name for name in vars(module) if name.startswith("FRAMES")], (
            f"{info.name}: frames belong in the catalog"
        )
    assert not list((REPO / "scripts").glob("*_statistics.py")), (
        "one script runs every statistics rule: scripts/statistics.py"
    )
    assert statistics_rule("certification_statistics").outputs["joined"] == "results/certify/certified.parquet"
    with pytest.raises(KeyError, match="known: ceiling_statistics"):
        statistics_rule("nothing_statistics")


def test_the_ceiling_function_returns_exactly_its_entrys_frames(tmp_path):
    records = tmp_path / "records.parquet"
    frame([{**r, "corpus": "wikitext"} for r in study_rows()]).write_parquet(records)
    entry = statistics_rule("ceiling_statistics")
    out = compute(entry, {"records": [str(records)]}, {**CONFIG, "content": {"wikitext": "prose"}})
    assert list(out) == list(entry.frames)
    assert out.summary["records"] == 2 * 4 * 5 * 4 * 3 and out.seeds == {"seed": 0, "bootstrap": 0}
    assert out.extra == {"population": "a, b on wikitext"}


def test_compute_refuses_a_function_whose_frames_differ_from_its_entry(tmp_path):
    check = tmp_path / "gpu-check.json"
    check.write_text(json.dumps(CHECK))
    wrong = StatisticsRule(
        name="gpu_statistics",
        module="trustmass.report.frames.gpu",
        frames=("headline_gpu", "extra"),
        doc="",
        inputs={"check": "gpu_check"},
    )
    with pytest.raises(ValueError, match="the catalog entry declares"):
        compute(wrong, {"check": [str(check)]}, {"seed": 0})


class _Named:
    """Snakemake's named lists as a rule script sees them: by name (a str or a list), or flat."""

    def __init__(self, **groups):
        self._groups = groups

    def items(self):
        return self._groups.items()

    def __iter__(self):
        for value in self._groups.values():
            yield from [value] if isinstance(value, str) else value

    def __getitem__(self, name):
        return self._groups[name]

    def __getattr__(self, name):
        try:
            return self._groups[name]
        except KeyError:
            raise AttributeError(name) from None


def test_the_one_script_writes_the_frames_and_their_sidecars(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # start_log redirects them; restored after the test
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    # the job-end code check reads this process's modules, which pytest has filled: it has its own tests
    monkeypatch.setattr("trustmass.plumbing.code_inputs.check_code_inputs", lambda smk, modules=None: None)
    check = tmp_path / "gpu-check.json"
    check.write_text(json.dumps(CHECK))
    out = tmp_path / stats_path("headline_gpu")
    out.parent.mkdir(parents=True)
    smk = SimpleNamespace(
        rule="gpu_statistics",
        log=[str(tmp_path / "job.log")],
        input=_Named(check=str(check), code=[str(REPO / "src" / "trustmass" / "report" / "frames" / "gpu.py")]),
        output=_Named(headline_gpu=str(out), prov=[f"{out}.prov.json"]),
        params=_Named(config={"seed": 0}, statistics="gpu_statistics"),
    )
    runpy.run_path(str(REPO / "scripts" / "statistics.py"), init_globals={"snakemake": smk})
    sys.stdout.flush()
    written = pl.read_parquet(out)
    assert written.equals(gpu.headline(CHECK)) and written.height == 12  # six timings, on both populations
    sidecar = json.loads(Path(f"{out}.prov.json").read_text())
    assert [Path(i["path"]).name for i in sidecar["inputs"]] == ["gpu-check.json", "gpu.py"]
    assert sidecar["config"] == {"seed": 0} and sidecar["seeds"] is None
    assert sidecar["extra"] == {
        "rule": "gpu_statistics",
        "summary": {"rows": 12, "device": "NVIDIA H200", "mode": "gpu"},
    }
    log = (tmp_path / "job.log").read_text()
    assert "headline_gpu: 12 rows" in log and log.rstrip().endswith("ok")
