"""The deployment method roster, one entry per method, import-light (no torch, no kvpress).

An entry is everything the stage knows about a method: its name, its kind (what the runner does with its
score; :mod:`trustmass.deploy.methods`), its selector contract (related-methods A.1;
:mod:`trustmass.deploy.contracts`), its kvpress press as a dotted name imported only when a press is built,
whether it needs the hub, and whether it is in the config's default method list (``deploy.methods: null``).
``names``, ``contracts`` and ``methods`` derive their tables from :data:`ROSTER`; adding a method is one
entry here (plus its press class, if kvpress lacks it).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import partial

__all__ = [
    "CONTOUR_WINDOW",
    "FIELDS",
    "KINDS",
    "ROSTER",
    "Method",
    "configured_methods",
    "default_methods",
    "library_modules",
]

KINDS = ("dense", "uniform", "pyramid", "headwise", "contourkv", "kvzip")
#: the selector contract's fields (related-methods A.1), in the order :func:`_contract` takes them
FIELDS = ("ranking", "query_domain", "observation_window", "allocation", "projection")
CONTOUR_WINDOW = 32  # ContourKV's observation window: inside the 32-position recency floor


@dataclass(frozen=True)
class Method:
    name: str
    kind: str
    contract: tuple = field(repr=False)  # (field, value) pairs over FIELDS
    press: str | None = None  # dotted name of the scorer's press class, imported lazily (None: no factory)
    press_options: tuple = ()  # (key, value) pairs the press class takes besides the ratio
    ratio_keyword: str = "compression_ratio"  # the press's argument that takes kvpress's ratio
    wraps: str | None = None  # dotted name of a press that takes the scorer as its one argument (CriticalKV)
    status: str = "offline"  # "offline" or "needs_hub"
    mode: str | None = None  # contourkv: "enforced" or "unenforced"
    # "press" (the factory's scorer), "reconstruction" (KVzip's pass) or "masks" (the press's own allocation of its
    # recorded score, read from the masks it ships: kept_sets(model, scores, cache) of the press)
    score: str = "press"
    options: tuple = ()  # contourkv: (key, value) pairs of contour_kept options (a floor reading, a scope)
    default: bool = True  # in the config's default method list (deploy.methods: null)

    @property
    def press_factory(self):
        """compression_ratio -> the scorer press, or None (dense, KVzip's reconstruction pass)."""
        return None if self.press is None else partial(_build, self)


def _load(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _build(found: Method, ratio: float):
    scorer = _load(found.press)(**{found.ratio_keyword: ratio}, **dict(found.press_options))
    return _load(found.wraps)(scorer) if found.wraps else scorer


def _contract(ranking: str, domain: str, window: str, allocation: str = "uniform") -> tuple:
    return tuple(zip(FIELDS, (ranking, domain, window, allocation, "token_topk")))


_SNAPKV = ("window_attention_maxpool", "last_w_rows")
_RECON = ("context_reconstruction", "reconstruction_pass", "prefix")
_SNAP = "kvpress.SnapKVPress"
_W32 = (("window_size", CONTOUR_WINDOW),)


def _uniform(name: str, press: str, contract: tuple, **kw) -> Method:
    return Method(name, "uniform", contract, press, **kw)


def _contour(mode: str, allocation: str) -> Method:
    return Method(f"contourkv_{mode}", "contourkv", _contract(*_SNAPKV, "32", allocation), _SNAP, _W32, mode=mode)


def _contour_recon(mode: str, allocation: str) -> Method:
    return Method(
        f"contourkv_recon_{mode}", "contourkv", _contract(*_RECON, allocation), mode=mode, score="reconstruction"
    )


def _hub(name: str, kind: str, press: str, contract: tuple, **kw) -> Method:
    return Method(name, kind, contract, press, status="needs_hub", default=False, **kw)


#: every method, in roster order (the default list's order)
ROSTER: tuple[Method, ...] = (
    Method("dense", "dense", _contract("none", "none", "0", "keep_all")),
    _uniform("snapkv", _SNAP, _contract(*_SNAPKV, "64")),
    _uniform(
        "snapkv_w32", _SNAP, _contract(*_SNAPKV, "32"), press_options=_W32
    ),  # ContourKV's score, uniform allocation
    Method("pyramidkv", "pyramid", _contract(*_SNAPKV, "64", "pyramid"), "kvpress.PyramidKVPress"),
    _uniform("tova", "kvpress.TOVAPress", _contract("last_row_attention", "row_T", "1")),
    _uniform("streaming_llm", "kvpress.StreamingLLMPress", _contract("position_sinks_recent", "none", "0")),
    _uniform("knorm", "kvpress.KnormPress", _contract("key_norm", "none", "0")),
    _uniform("keydiff", "kvpress.KeyDiffPress", _contract("key_diversity", "none", "0")),
    _uniform(
        "criticalkv",
        _SNAP,
        _contract("window_attention_x_value_norm", "last_w_rows", "64"),
        wraps="kvpress.CriticalKVPress",
    ),
    _uniform(
        "expected_attention",
        "kvpress.ExpectedAttentionPress",
        _contract("expected_attention", "query_statistics", "64"),
    ),
    _uniform("compactor", "kvpress.CompactorPress", _contract("leverage_blend_attention", "last_w_rows", "64")),
    _uniform("h2o", "trustmass.deploy.h2o_press.H2OPress", _contract("accumulated_mass", "rows_0..T", "prefix")),
    Method("adakv", "headwise", _contract(*_SNAPKV, "64", "ada_headwise"), _SNAP),
    Method("kvzip", "kvzip", _contract(*_RECON, "kvzip_threshold"), score="reconstruction"),
    _contour("enforced", "contour_enforced"),
    _contour("unenforced", "contour"),
    _contour_recon("enforced", "contour_enforced"),
    _contour_recon("unenforced", "contour"),
    _hub("kvzap", "uniform", "kvpress.KVzapPress", _contract("kvzap_model", "none", "0")),
    # DuoAttention's head scores on the fly (kvpress's recipe from BookSum on the hub, kmfoda/booksum): kvpress
    # 0.5.5's published patterns cover none of the paper's deployed models (its table names Llama 3.1 8B Instruct
    # by the repository's former id, and no Qwen model) and are read from GitHub, not the hub
    _hub(
        "duo_attention",
        "headwise",
        "trustmass.deploy.shipped.DuoAttentionMasks",
        _contract("duo_head_pattern", "none", "0", "duo_headwise"),
        ratio_keyword="head_compression_ratio",
        press_options=(("on_the_fly_scoring", True),),
        score="masks",
    ),
    _hub(
        "fastkvzip",
        "headwise",
        "trustmass.deploy.shipped.FastKVzipScores",
        _contract("fastkvzip_gates", "none", "0", "fastkvzip_headwise"),
        score="masks",
    ),
)


def default_methods() -> list[str]:
    """The methods run when ``deploy.methods`` is null: every roster entry marked ``default``, in roster order."""
    return [m.name for m in ROSTER if m.default]


def configured_methods(deploy) -> list[str]:
    """``deploy.methods`` of a deploy config section, or (null or absent) the roster's default list."""
    listed = (deploy or {}).get("methods")
    return default_methods() if listed is None else list(listed)


def library_modules() -> list[str]:
    """The ``trustmass`` modules the entries' presses are loaded from by dotted name (``press``, ``wraps``), which
    static import analysis cannot see: the deployment rules declare them as code inputs
    (``workflow/rules/deploy.smk``), so that editing one (``trustmass.deploy.h2o_press``) reruns them.  Every
    entry's, configured or not: a module that would not run costs a needless rerun at most."""
    dotted = {name.rpartition(".")[0] for found in ROSTER for name in (found.press, found.wraps) if name}
    return sorted(name for name in dotted if name == "trustmass" or name.startswith("trustmass."))
