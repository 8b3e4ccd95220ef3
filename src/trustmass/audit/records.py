"""The selector audit: deployed and value-aware rules against the certified pool optimum (spec §5, App C).

Records (one frame per capture shard, joined row by row to that shard's ceiling records)
----------------------------------------------------------------------------------------
One record per (layer, query head, sampled row, budget, rule) for every rule that declares an audit
role in its contract (``registry.audit_rules()``): the four audited deployed rules
(``registry.AUDITED``: SnapKV, H2O, Quest, StreamingLLM), Quest's page-16 configuration (s >= 16),
the positional control (``recency``, the s most recent keys), 002's count-debiased H2O and
value-aware block rules (mass / NoLev / MII), 004's block-select, and ``top_mass`` itself.
TOVA is not scored: at every (row, budget) its eviction is run and asserted equal to top-mass
(``TovaIdentityError`` otherwise); the mismatch count is carried by the top-mass records
(``tova_mismatch``, always False when the run finishes).

Row -> instance exactly as ``ceiling.instance_of``: the row's positive-mass keys, p renormalised in
float64.  A rule's kept positions with zero mass carry no mass and cannot change ``es``; they are
dropped before scoring (``n_kept_zero`` counts them).  Columns:

* ``es_rule``: the forced-weight error of the rule's per-query set (the rule re-chooses at every row);
* ``es_cf``: the cache-faithful error (below); ``cf_reading`` names the reading, as the rule's
  contract declares it (``cache_faithful``);
* joined from the ceiling record of the same (layer, head, query_pos, budget): ``dropped_mass``
  (top-mass's), ``D``, ``es_top``, ``es_pool``, ``es_bal``, ``kappa_hat``, ``enumerated``;
* ``excess = es_rule / ES_pool`` and ``excess_cf = es_cf / ES_pool`` at the enumerated budgets
  (``operator.ratio_kappa``'s degenerate rules: 1 when es_rule = 0, inf when ES_pool = 0);
  ``over_top = es_rule / es_top`` at every budget; ``over_bal = es_rule / es_bal`` (the [C] reference
  at the native budgets, where no ES_pool exists);
* ``in_pool``: the kept positive-mass keys number s and lie inside the candidate pool C_s.  Then
  ``es_rule >= ES_pool`` is a theorem (ES_pool is the minimum over s-subsets of C_s).  A rule that
  keeps a key outside C_s can beat ES_pool (excess < 1 is then legitimate: ES_pool is not ES).
* ``contract_sha256``: the hash of the run's fixed selector contract
  (``selectors.run_contract.selector_run`` of the rule at the budget, on capture
  ``model/corpus/doc``, layer set (layer,)); two rules' records compare like for like where their
  contracts differ in the ranking scalar alone (``run_contract.comparable``).

Two accountings (spec §5)
-------------------------
*Per-query*: ``es_rule`` above.  *Cache-faithful*: one evicted cache serves every later query.  The
shards hold, per KV group, 6 sampled rows (the same positions for the group's query heads) with
their mass row, accumulated mass, SnapKV window sums and query -- not every attention row.  So:

* **Eviction time** tau = the KV group's first sampled row (row 0): the cache is compressed once,
  there, by the rule reading the evidence it would read at that query (SnapKV: the window sums at
  tau, i.e. its prefill compression with tau as the prefill end; H2O: accumulated mass at tau;
  StreamingLLM/recency: sinks + the recency window as of tau; top-mass (= TOVA): p at tau; the
  value-aware rules: their block scores at tau).  The frozen set F (s positions, all <= tau) then
  serves every later sampled row r >= 1 of the same head: ``es_cf = es(row r restricted to F)``.
  Keys tau+1..i written after the eviction are *not* kept (the budget is strict: s keys in all).
  At row 0 itself the two readings coincide (tested).
* **Quest and block-select do not evict**: they keep the full cache and choose pages/blocks per
  query, so their cache-faithful reading *is* the per-query one (``cf_reading = "no_eviction"``).
* **Not implementable from the shards**: the token-by-token sequential simulation of H2O (its
  accumulated mass over the survivors after each eviction needs every attention row t <= tau).  For
  StreamingLLM and recency the token-by-token simulation needs nothing more and equals the
  per-query set exactly (the streaming cache at query i is sinks + the last keys before i), so the
  frozen reading is the one that differs.

The invariant "per-query never worse than cache-faithful" is a theorem only where the frozen set is
the per-query set (row 0; the no-eviction rules; token-by-token positional rules): a heuristic
rule's per-query choice at row r is not an optimum over sets, so an old frozen set can beat it on a
given row.  :func:`accounting_violations` reports the rows where it happens; the tests assert the
theorem cases exactly and the median inequality on data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from trustmass.core import operator as op
from trustmass.core.enumeration import PoolRule, budget_settings, candidate_pool
from trustmass.core.selectors.contract import contract, run
from trustmass.core.selectors.deployed import TovaIdentityError
from trustmass.core.selectors.registry import REGISTRY, audit_rules
from trustmass.core.selectors.run_contract import selector_run
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.plumbing.config import embedded_default

# AUDITED and FIG3_RULES are derived in the registry from the contracts; report.audit_stats reads them here
#: ceiling columns joined to every audit record
CEILING_JOIN = ("dropped_mass", "D", "es_top", "es_pool", "es_bal", "kappa_hat", "enumerated")
KEYS = ("layer", "head", "query_pos", "budget")

COLUMNS = [
    "model",
    "corpus",
    "doc",
    "layer",
    "head",
    "kv_head",
    "row",
    "query_pos",
    "evict_pos",
    "budget",
    "rule",
    "contract_sha256",
    "n_kept_zero",
    "in_pool",
    "es_rule",
    "es_cf",
    "cf_reading",
    "tova_mismatch",
    *CEILING_JOIN,
    "excess",
    "excess_cf",
    "over_top",
    "over_bal",
    "label",
]


_DEFAULT = embedded_default()  # config.yaml: the defaults below are its values, not copies


@dataclass(frozen=True)
class AuditSettings:
    enumerated: tuple[int, ...] = tuple(_DEFAULT["budgets"]["enumerated"])
    native: tuple[int, ...] = tuple(_DEFAULT["budgets"]["native"])
    pool: PoolRule = PoolRule.from_config(_DEFAULT)  # e(s) at the enumerated budgets (the ceiling's C_s)
    kappa_threshold: float = _DEFAULT["labels"]["kappa_threshold"]
    rules: tuple[str, ...] = field(default_factory=audit_rules)  # every rule with an audit role
    windows: tuple[int, ...] = tuple(_DEFAULT["capture"]["windows"])

    def __post_init__(self):
        for name in self.rules:
            if name not in REGISTRY:
                raise ValueError(
                    f"AuditSettings.rules: no rule {name!r}; fix: use registered names, e.g. {audit_rules()}"
                )
            if not contract(REGISTRY[name]).in_audit:
                raise ValueError(
                    f"AuditSettings.rules: {name!r} declares no audit role; fix: declare audit_role and "
                    f"cache_faithful in its class, or audit only {audit_rules()}"
                )

    @classmethod
    def from_config(cls, cfg: dict) -> AuditSettings:
        """From the config keys budgets, enumeration, labels and capture/windows."""
        return cls(
            **budget_settings(cfg),
            kappa_threshold=float(cfg["labels"]["kappa_threshold"]),
            windows=tuple(cfg["capture"]["windows"]),
        )

    @property
    def budgets(self) -> tuple[int, ...]:
        return (*self.enumerated, *self.native)


def cache_faithful_readings(rules: tuple[str, ...]) -> dict[str, str]:
    """Each rule's cache-faithful reading, as its contract declares it (module docstring)."""
    return {name: contract(REGISTRY[name]).cache_faithful for name in rules}


def _score(x: SelectorInput, kept: np.ndarray) -> tuple[float, int, np.ndarray]:
    """(es of the kept positions on x's instance, zero-mass kept positions, instance indices)."""
    idx = x.instance_index[np.asarray(kept, dtype=np.int64)]
    zero = int((idx < 0).sum())
    idx = idx[idx >= 0]
    if idx.size == 0:
        return math.nan, zero, idx
    return op.es(x.instance, idx), zero, idx


def row_audit(
    x: SelectorInput, settings: AuditSettings, frozen: Mapping | None = None, es_pool: Mapping | None = None
) -> list[dict]:
    """Per-query audit of one row at every budget and rule; ``frozen`` ({(rule, budget): positions})
    gives the cache-faithful sets to score on this row (None: this row is the eviction time).

    ``in_pool`` needs C_s, whose single-key errors cost more than most rules; it is computed where
    it matters -- at an enumerated budget where ``es_rule < ES_pool`` (``es_pool``: {budget: ES_pool}
    from the ceiling record; every enumerated budget when not given) -- True for top-mass (A*_s is in
    C_s by construction) and null elsewhere."""
    out = []
    inst = x.instance
    readings = cache_faithful_readings(settings.rules)
    for s in settings.budgets:
        enumerated = s in settings.enumerated
        pool = None
        tova_mismatch = False
        try:
            tova = run(REGISTRY["tova"], x, s)
        except TovaIdentityError:
            tova_mismatch = True
            tova = None
        for name in settings.rules:
            rule = REGISTRY[name]
            if s < rule.min_budget:
                continue
            kept = run(rule, x, s)
            if name == "top_mass" and tova is not None and not np.array_equal(tova, kept):
                tova_mismatch = True
            es_rule, zero, idx = _score(x, kept)
            if frozen is None or readings[name] == "no_eviction":
                es_cf = es_rule
            else:
                es_cf = _score(x, frozen[(name, s)])[0]
            in_pool = None
            if name == "top_mass" and enumerated:
                in_pool = True
            elif enumerated and (es_pool is None or s not in es_pool or not es_rule >= es_pool[s] * (1 - 1e-9)):
                if pool is None:
                    pool = set(candidate_pool(inst, min(s, inst.n_keys), settings.pool.extra(s)).tolist())
                in_pool = bool(idx.size == min(s, inst.n_keys) and set(idx.tolist()) <= pool)
            out.append(
                {
                    "budget": s,
                    "rule": name,
                    "n_kept_zero": zero,
                    "in_pool": in_pool,
                    "es_rule": es_rule,
                    "es_cf": es_cf,
                    "cf_reading": readings[name],
                    "tova_mismatch": tova_mismatch if name == "top_mass" else False,
                }
            )
    return out


def frozen_sets(x: SelectorInput, settings: AuditSettings) -> dict:
    """The cache each evicting rule leaves at the eviction time (row x), per budget."""
    out = {}
    readings = cache_faithful_readings(settings.rules)
    for s in settings.budgets:
        for name in settings.rules:
            rule = REGISTRY[name]
            if s >= rule.min_budget and readings[name] != "no_eviction":
                out[(name, s)] = run(rule, x, s)
    return out


def layer_audit(t: dict, settings: AuditSettings, es_pool: Mapping | None = None) -> list[dict]:
    """Audit rows of one layer (numpy arrays keyed as ``shards.read_layer``); ``es_pool`` maps
    (head, query_pos) to {budget: ES_pool} (the ceiling records), see :func:`row_audit`."""
    n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
    group = n_q // n_kv
    out = []
    for h in range(n_q):
        kv = h // group
        positions = t["positions"][kv].tolist()
        order = np.argsort(positions, kind="stable")  # eviction at the earliest sampled row
        frozen = None
        tau = positions[int(order[0])]
        for rank, r in enumerate(order.tolist()):
            x = SelectorInput.from_layer(t, h, r, settings.windows)
            pools = None if es_pool is None else es_pool.get((h, positions[r]), {})
            if rank == 0:
                frozen = frozen_sets(x, settings)
                recs = row_audit(x, settings, None, pools)
            else:
                recs = row_audit(x, settings, frozen, pools)
            for rec in recs:
                rec.update(head=h, kv_head=kv, row=r, query_pos=positions[r], evict_pos=tau)
            out.extend(recs)
    return out


def _layer_job(args) -> list[dict]:
    from trustmass.contracts.shards import read_layer

    shard_path, layer, settings, es_pool = args
    t = read_layer(shard_path, layer)
    recs = layer_audit(t, settings, es_pool)
    for rec in recs:
        rec["layer"] = layer
    return recs


def join_ceiling(audit: pl.DataFrame, ceiling: pl.DataFrame, settings: AuditSettings) -> pl.DataFrame:
    """Join the audit rows to the ceiling records of the same (layer, head, query_pos, budget) and
    add the ratios and the label."""
    ceil = ceiling.select([*KEYS, *CEILING_JOIN]).with_columns(
        pl.col("layer").cast(pl.Int64),
        pl.col("head").cast(pl.Int64),
        pl.col("query_pos").cast(pl.Int64),
        pl.col("budget").cast(pl.Int64),
    )
    audit = audit.with_columns([pl.col(c).cast(pl.Int64) for c in KEYS])
    f = audit.join(ceil, on=list(KEYS), how="left")
    missing = f.filter(pl.col("es_top").is_null())
    if missing.height:
        r = missing.row(0, named=True)
        raise ValueError(
            f"audit rows without a ceiling record, e.g. layer {r['layer']} head {r['head']} pos {r['query_pos']} budget {r['budget']}"
        )
    thr = settings.kappa_threshold

    def ratio(num: str, den: str) -> pl.Expr:
        scale = pl.col("D").abs() * op.REL_TOL  # operator.is_zero's scale
        return (
            pl.when(pl.col(num).is_null() | pl.col(den).is_null())
            .then(None)
            .when(pl.col(num).abs() <= scale)
            .then(1.0)
            .when(pl.col(den).abs() <= scale)
            .then(float("inf"))
            .otherwise(pl.col(num) / pl.col(den))
        )

    f = f.with_columns(
        excess=pl.when(pl.col("enumerated")).then(ratio("es_rule", "es_pool")),
        excess_cf=pl.when(pl.col("enumerated")).then(ratio("es_cf", "es_pool")),
        over_top=ratio("es_rule", "es_top"),
        over_bal=ratio("es_rule", "es_bal"),
    )
    f = f.with_columns(
        label=pl.when(pl.col("enumerated"))
        .then(pl.col("es_rule") > thr * pl.col("es_pool"))
        .otherwise(pl.col("es_rule") > thr * pl.col("es_bal"))
    )
    return f


def record_contracts(rows: list[dict], capture_id: str) -> None:
    """Set each audit record's ``contract_sha256``: one run contract per (layer, rule, budget)."""
    hashes: dict = {}
    for rec in rows:
        key = (rec["layer"], rec["rule"], rec["budget"])
        if key not in hashes:
            hashes[key] = selector_run(REGISTRY[key[1]], key[2], capture_id, (key[0],)).sha256
        rec["contract_sha256"] = hashes[key]


def shard_audit(
    shard_path: str, ceiling: pl.DataFrame, model: str, corpus: str, doc: str, settings: AuditSettings, workers: int = 1
) -> pl.DataFrame:
    """All audit records of one capture shard, joined to its ceiling records (:data:`COLUMNS`)."""
    from trustmass.contracts.shards import read_metadata

    layers = sorted(int(k) for k in read_metadata(shard_path)["layers"])
    pools: dict = {layer: {} for layer in layers}
    enumerated = ceiling.filter(pl.col("enumerated")).select(["layer", "head", "query_pos", "budget", "es_pool"])
    for layer, head, pos, budget, value in enumerated.iter_rows():
        if value is not None and layer in pools:
            pools[layer].setdefault((head, pos), {})[budget] = value
    jobs = [(shard_path, layer, settings, pools[layer]) for layer in layers]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_layer_job, jobs))
    else:
        parts = [_layer_job(j) for j in jobs]
    rows = [rec for part in parts for rec in part]
    record_contracts(rows, f"{model}/{corpus}/{doc}")
    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        model=pl.lit(model), corpus=pl.lit(corpus), doc=pl.lit(doc)
    )
    frame = join_ceiling(frame, ceiling, settings)
    return frame.select(COLUMNS).sort(["layer", "head", "query_pos", "budget", "rule"])


def accounting_violations(records: pl.DataFrame, rel_tol: float = 1e-9) -> pl.DataFrame:
    """Rows where the per-query reading is worse than the cache-faithful one (es_rule > es_cf)."""
    return records.filter(pl.col("es_rule") > pl.col("es_cf") * (1.0 + rel_tol) + 1e-15)
