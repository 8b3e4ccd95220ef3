"""One map budget: ``statistics.map_budget`` reaches every rule that reads the map (Figure 2 and Table 6's
statistics, the loss stage's map, the allocation panel), so changing it reruns them all."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import SNAKEFILE

pytestmark = pytest.mark.workflow

READERS = ("ceiling_statistics", "loss_map", "allocation_panel")


def _rule_params(tmp_path: Path, config: dict) -> dict:
    """Each reader's ``params.config`` as the workflow builds it from config.yaml plus ``config``."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings(quiet=None)) as api:
        wf = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(config=config),
            snakefile=SNAKEFILE,
            workdir=tmp_path,
        )
        params = {name: wf._workflow.get_rule(name).params["config"] for name in READERS}
    # a model-keyed rule's params follow the job's model (its control arm's plan for a twin): read the trained one's
    trained = SimpleNamespace(model="smollm2-135m")
    return {name: dict(p(trained) if callable(p) else p) for name, p in params.items()}


def test_the_map_budget_key_moves_every_reader(tmp_path):
    default = _rule_params(tmp_path / "a", {})
    moved = _rule_params(tmp_path / "b", {"statistics": {"map_budget": 16}})
    for name in READERS:
        assert default[name]["statistics"]["map_budget"] == 8, name
        assert moved[name]["statistics"]["map_budget"] == 16, name
    assert "budget" not in default["loss_map"].get("loss", {})  # the restricted rows' budget is not the map's
