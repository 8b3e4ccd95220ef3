"""The method roster (trustmass.deploy.roster): one entry per method, from which the light name lists, the
contracts, the runner's methods and the config's default list are derived."""

import subprocess
import sys

import pytest
import yaml

from conftest import REPO
from trustmass.deploy import contracts, names, roster
from trustmass.plumbing.config import validate_config

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def test_every_entry_is_complete():
    seen = set()
    for m in roster.ROSTER:
        assert m.name not in seen, m.name
        seen.add(m.name)
        assert m.kind in roster.KINDS, m
        assert tuple(dict(m.contract)) == roster.FIELDS, m.name
        assert m.status in ("offline", "needs_hub"), m.name
        assert m.default == (m.status == "offline"), m.name  # the hub methods only where deploy.methods names them
        assert (m.press is None) == (m.kind == "dense" or m.score == "reconstruction"), m.name


def test_the_light_modules_derive_from_the_roster_without_kvpress():
    code = (
        "import sys; from trustmass.deploy import names, contracts, roster; "
        "print(sorted(k for k in ('torch', 'kvpress', 'transformers') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
    assert names.OFFLINE + names.NEEDS_HUB == tuple(m.name for m in roster.ROSTER)
    assert set(contracts.CONTRACTS) == {m.name for m in roster.ROSTER}
    assert names.RECONSTRUCTION == ("kvzip", "contourkv_recon_enforced", "contourkv_recon_unenforced")
    assert names.CONTOURKV == (
        "contourkv_enforced",
        "contourkv_unenforced",
        "contourkv_recon_enforced",
        "contourkv_recon_unenforced",
    )


def test_a_press_is_built_from_its_lazily_imported_name():
    kvpress = pytest.importorskip("kvpress")
    from trustmass.deploy import methods
    from trustmass.deploy.h2o_press import H2OPress

    assert methods.METHODS["snapkv_w32"].press_factory(0.5) == kvpress.SnapKVPress(
        compression_ratio=0.5, window_size=32
    )
    critical = methods.METHODS["criticalkv"].press_factory(0.25)
    assert isinstance(critical, kvpress.CriticalKVPress) and critical.press == kvpress.SnapKVPress(
        compression_ratio=0.25
    )
    assert methods.METHODS["duo_attention"].press_factory(0.5).head_compression_ratio == 0.5
    assert isinstance(methods.METHODS["h2o"].press_factory(0.5), H2OPress)
    assert methods.METHODS["dense"].press_factory is None and methods.METHODS["kvzip"].press_factory is None


def test_the_default_method_list_is_the_rosters():
    default = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    assert default["deploy"]["methods"] is None  # not a copy of the roster
    assert roster.configured_methods(validate_config(default, SCHEMA)["deploy"]) == list(names.OFFLINE)
    assert roster.configured_methods({"methods": ["dense", "snapkv"]}) == ["dense", "snapkv"]


def test_the_resolved_config_spells_the_default_list_out():
    from trustmass.cli.plan import resolve_config

    assert resolve_config()["deploy"]["methods"] == list(names.OFFLINE)
