"""The rank-16 probe (paper spec §6 "Rank-16 probe", App E): can the query and key projections
reproduce the balancing swaps?

Score of key j for query row i, per layer and query head (form [C]):

    score_j = logit_j + alpha * (U q_i)^T (V k_j),        U, V in R^{r x d}, r = 16,

with q_i the row's post-RoPE query, k_j the key as cached and logit_j the row's logit.  The probe
keeps the s keys of largest score.  Ranking by logit is ranking by mass (softmax and softcap are
monotone), so alpha = 0, or U = 0, selects exactly top-mass A*_s.

Initialisation (LoRA style): U = 0 and V small random.  With U = V = 0 the gradient of the
bilinear term vanishes for both factors (d/dU = (V k) q^T, d/dV = (U q) k^T), so training could
never leave the origin; with U = 0 alone the score is still exactly the logit -- an untrained probe
selects identically to top-mass -- and d/dU = (V k_j) q_i^T is nonzero.

Training target: per captured (layer, head, row) the registry's balancing kept set A_bal at budget
s (a prefill teacher reading the values) and top-mass A*_s; a row where balancing makes no swap
carries the signal "stay at top-mass".  Surrogate (logistic, against the weakest kept key; alpha = 1
during training, the scale lives in U, V): for each row with visible keys K and positives A_bal,

    L_row = sum_{k in K \\ A_bal} softplus(score_k - min_{j in A_bal} score_j),

averaged over rows, plus an optional L2 penalty (weight_decay/2)(||U||^2 + ||V||^2); it is small
exactly when every visible non-member sits below the weakest member of A_bal -- the kept set is
A_bal -- by a margin.  The negatives are *all* visible keys, not only the balancing pool: the probe
ranks every key at selection time, and a first version that ranked only A_bal plus the 64 largest
logits learned to lift keys outside them (training loss ~0, most no-swap rows moved at
evaluation).  Pairing each negative with the weakest positive (not every positive) keeps the cost
O(N) per row.  Full-batch Adam, one layer at a time (the loss separates by layer), deterministic
for a seed.

``logits`` in the training rows are log p of the captured row (the row's logits up to its
log-partition constant, which no ranking sees), so the untrained probe reproduces the registry's
top-mass set exactly, ties included; visible keys whose float32 mass underflowed carry the finite
floor :data:`ZERO_MASS_LOGIT` (ranked last among visible keys, by position, as top-mass pads them)
and keys the row cannot see carry -inf.  The restricted forward passes its own logits.

Metric: held-out swap recall -- of the keys balancing swaps in (A_bal \\ A*_s), the fraction the
probe keeps, over rows with at least one swap (paper: 0.33 and 0.39).  The alpha calibration on half
of the held-out documents and the loss check on the other half need the model forward (the loss
stage wires them); this module scores and selects.  The pre-registered bar is the loss stage's: the
probe should recover 25% of balancing's decode-time loss reduction (the paper finds at most 5%).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from trustmass.contracts.shards import read_layer, read_metadata, tensor_name
from trustmass.core.selectors.contract import run
from trustmass.core.selectors.registry import REGISTRY
from trustmass.core.selectors.selector_input import SelectorInput
from trustmass.plumbing.provenance import atomic_write

#: the probe's rank (paper: 16)
RANK = 16
#: the logit of a visible key whose captured mass is zero: below every log p, finite so that it
#: still ranks before the keys the row cannot see, and large enough that no probe term moves it
ZERO_MASS_LOGIT = -1e30
#: the safetensors header key holding the probe's JSON metadata
METADATA_KEY = "trustmass_probe"
#: the standard deviation of V at initialisation, in units of 1/sqrt(d)
INIT_SCALE = 0.1
#: shard fields the training rows read
ROW_FIELDS = ("positions", "p", "keys", "values", "query")


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ProbeParams:
    """U, V per layer ([Hq, rank, d] float32 tensors), the budget it was trained at, the mixing
    weight alpha and the training documents."""

    u: dict[int, torch.Tensor]
    v: dict[int, torch.Tensor]
    rank: int = RANK
    budget: int = 8
    alpha: float = 1.0
    train_docs: tuple[str, ...] = ()
    info: dict = field(default_factory=dict)  # free-form provenance (steps, lr, seed, losses)

    def layer(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(U, V) of one layer."""
        return self.u[int(layer)], self.v[int(layer)]

    @property
    def layers(self) -> tuple[int, ...]:
        return tuple(sorted(self.u))

    def with_alpha(self, alpha: float) -> ProbeParams:
        """The same probe at another mixing weight (the calibration's knob)."""
        return replace(self, alpha=float(alpha))

    def save(self, path: str | os.PathLike) -> None:
        """Write ``layerLLL.u`` / ``layerLLL.v`` and the JSON metadata in one atomic step."""
        tensors = {}
        for layer in self.layers:
            tensors[tensor_name(layer, "u")] = self.u[layer].detach().to(torch.float32).contiguous()
            tensors[tensor_name(layer, "v")] = self.v[layer].detach().to(torch.float32).contiguous()
        meta = {
            "rank": self.rank,
            "budget": self.budget,
            "alpha": self.alpha,
            "train_docs": list(self.train_docs),
            "layers": list(self.layers),
            "info": self.info,
        }
        with atomic_write(path) as tmp:
            save_file(tensors, str(tmp), metadata={METADATA_KEY: json.dumps(meta, sort_keys=True)})

    @classmethod
    def load(cls, path: str | os.PathLike) -> ProbeParams:
        with safe_open(os.fspath(path), framework="pt") as fh:
            header = fh.metadata() or {}
            if METADATA_KEY not in header:
                raise ValueError(
                    f"{os.fspath(path)}: no {METADATA_KEY!r} metadata; not a probe written by ProbeParams.save"
                )
            meta = json.loads(header[METADATA_KEY])
            u = {int(layer): fh.get_tensor(tensor_name(layer, "u")) for layer in meta["layers"]}
            v = {int(layer): fh.get_tensor(tensor_name(layer, "v")) for layer in meta["layers"]}
        return cls(
            u=u,
            v=v,
            rank=int(meta["rank"]),
            budget=int(meta["budget"]),
            alpha=float(meta["alpha"]),
            train_docs=tuple(meta["train_docs"]),
            info=meta["info"],
        )


def init_params(
    shapes: dict[int, tuple[int, int]], rank: int = RANK, budget: int = 8, seed: int = 0, train_docs: Sequence[str] = ()
) -> ProbeParams:
    """The untrained probe: per layer (n_query_heads, head_dim) -> U = 0, V ~ N(0, (INIT_SCALE^2/d))."""
    gen = torch.Generator().manual_seed(int(seed))
    u, v = {}, {}
    for layer in sorted(shapes):
        n_heads, d = shapes[layer]
        u[layer] = torch.zeros(n_heads, rank, d)
        v[layer] = torch.randn(n_heads, rank, d, generator=gen) * (INIT_SCALE / d**0.5)
    return ProbeParams(u=u, v=v, rank=rank, budget=budget, train_docs=tuple(train_docs))


# ---------------------------------------------------------------------------------------------
# scoring and selection (batched; what the restricted forward calls per layer)
# ---------------------------------------------------------------------------------------------


def _heads_keys(keys: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[Hkv, N, d] -> [Hq, N, d]: query head h reads KV head h // (Hq / Hkv)."""
    n_kv = keys.shape[0]
    if n_heads % n_kv:
        raise ValueError(f"{n_heads} query heads do not split into {n_kv} KV groups")
    return keys.repeat_interleave(n_heads // n_kv, dim=0)


def bilinear(query: torch.Tensor, keys: torch.Tensor, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(U q_i)^T (V k_j) for every query row and key: query [Hq,M,d], keys [Hkv,N,d], U/V [Hq,r,d]
    -> [Hq, M, N] (the dtype of U)."""
    u, v = u.to(query.device), v.to(query.device)  # a probe loaded from file sits on the CPU
    uq = torch.einsum("hrd,hmd->hmr", u, query.to(u.dtype))
    vk = torch.einsum("hrd,hnd->hnr", v, _heads_keys(keys, u.shape[0]).to(v.dtype))
    return torch.einsum("hmr,hnr->hmn", uq, vk)


def probe_scores(
    query: torch.Tensor,
    keys: torch.Tensor,
    logits: torch.Tensor,
    params_layer: tuple[torch.Tensor, torch.Tensor],
    alpha: float,
) -> torch.Tensor:
    """score = logits + alpha * (U q)^T (V k), [Hq, M, N] in float64.

    float64, so that the logits' own ranking (and its ties) survives the addition at alpha = 0;
    -inf logits (keys a row cannot see) stay -inf.
    """
    base = logits.to(torch.float64)
    if alpha == 0:
        return base.clone()
    u, v = params_layer
    return base + float(alpha) * bilinear(query, keys, u, v).to(torch.float64)


def select_top(scores: torch.Tensor, budget: int) -> torch.Tensor:
    """The `budget` keys of largest score per row, [.., N] -> [.., s] positions ascending.

    Ties: descending score, then ascending position (a stable descending sort).  Keys at -inf are
    never kept: a row with fewer than s finite scores keeps those, padded at the end with -1.
    """
    s = min(int(budget), scores.shape[-1])
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :s]
    finite = torch.isfinite(torch.gather(scores, -1, order))
    big = torch.iinfo(torch.int64).max
    kept = torch.where(finite, order, torch.full_like(order, big)).sort(dim=-1).values
    return torch.where(kept == big, torch.full_like(kept, -1), kept)


def probe_select(
    query: torch.Tensor,
    keys: torch.Tensor,
    logits: torch.Tensor,
    params_layer: tuple[torch.Tensor, torch.Tensor],
    alpha: float,
    budget: int,
) -> torch.Tensor:
    """The probe's kept sets [Hq, M, s]: :func:`select_top` of :func:`probe_scores` (-inf logits
    mark the keys a row cannot see)."""
    with torch.no_grad():
        return select_top(probe_scores(query, keys, logits, params_layer, alpha), budget)


# ---------------------------------------------------------------------------------------------
# training rows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RowBlock:
    """The captured rows of one (document, layer): every query head's R rows.

    ``query`` [Hq,R,d] and ``keys`` [Hkv,N,d] float32; ``logits`` [Hq,R,N] float64 (log p, the
    floor for visible zero-mass keys, -inf past the row's position); ``top`` and ``bal`` [Hq,R,s]
    int64 (A*_s and A_bal, positions ascending); ``positions`` [Hq,R] the rows' query positions.
    """

    doc: str
    query: torch.Tensor
    keys: torch.Tensor
    logits: torch.Tensor
    top: torch.Tensor
    bal: torch.Tensor
    positions: torch.Tensor

    @property
    def swaps(self) -> torch.Tensor:
        """[Hq,R] number of keys balancing swapped in."""
        return _new_mask(self.bal, self.top).sum(-1)


def _new_mask(kept: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """[.., s] mask of the entries of `kept` (>= 0) absent from `reference` in the same row."""
    inside = (kept[..., :, None] == reference[..., None, :]).any(-1)
    return (kept >= 0) & ~inside


@dataclass(frozen=True, eq=False)
class TrainingRows:
    """Row blocks per layer, all at one budget, from the documents `docs`."""

    budget: int
    docs: tuple[str, ...]
    layers: dict[int, list[RowBlock]]

    def shapes(self) -> dict[int, tuple[int, int]]:
        """Per layer (n_query_heads, head_dim): what :func:`init_params` needs."""
        return {layer: tuple(blocks[0].query.shape[::2]) for layer, blocks in self.layers.items()}


def mass_logits(p: np.ndarray, position: int) -> np.ndarray:
    """log p over keys 0..position (ZERO_MASS_LOGIT where p = 0), -inf beyond; float64."""
    out = np.full(p.shape[0], -np.inf)
    row = np.asarray(p[: position + 1], dtype=np.float64)
    with np.errstate(divide="ignore"):
        out[: position + 1] = np.where(row > 0, np.log(row), ZERO_MASS_LOGIT)
    return out


def _row_targets(t: dict, head: int, r: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """(A*_s, A_bal) of one captured row through the registry's checked rules, padded with -1."""
    x = SelectorInput.from_layer(t, head, r)
    sets = [run(REGISTRY[name], x, budget) for name in ("top_mass", "balancing")]
    return tuple(np.pad(a, (0, budget - a.shape[0]), constant_values=-1) for a in sets)


def layer_block(t: dict, doc: str, budget: int) -> RowBlock:
    """One document's layer (fields ROW_FIELDS as ``read_layer`` returns them) -> its RowBlock."""
    n_heads, n_rows, _ = t["query"].shape
    group = n_heads // t["keys"].shape[0]
    positions = np.repeat(t["positions"], group, axis=0)  # [Hq, R]
    logits = np.empty(t["p"].shape)
    top = np.empty((n_heads, n_rows, budget), dtype=np.int64)
    bal = np.empty_like(top)
    for h in range(n_heads):
        for r in range(n_rows):
            logits[h, r] = mass_logits(t["p"][h, r], int(positions[h, r]))
            top[h, r], bal[h, r] = _row_targets(t, h, r, budget)
    return RowBlock(
        doc=doc,
        query=torch.from_numpy(np.asarray(t["query"], dtype=np.float32)),
        keys=torch.from_numpy(np.asarray(t["keys"], dtype=np.float32)),
        logits=torch.from_numpy(logits),
        top=torch.from_numpy(top),
        bal=torch.from_numpy(bal),
        positions=torch.from_numpy(positions),
    )


def training_rows(
    shard_paths: Iterable[str | os.PathLike], budget: int = 8, layers: Iterable[int] | None = None
) -> TrainingRows:
    """Every captured row of the shards at `budget`: per layer one RowBlock per document.

    Targets are the registry's ``top_mass`` and ``balancing`` rules run on each row (checked by
    ``contract.run``); ``layers`` restricts to some layers (default: all the shard holds).
    """
    out: dict[int, list[RowBlock]] = {}
    docs = []
    for path in shard_paths:
        meta = read_metadata(path)
        docs.append(str(meta.get("doc", os.fspath(path))))
        wanted = sorted(int(x) for x in meta["layers"]) if layers is None else [int(x) for x in layers]
        for layer in wanted:
            t = read_layer(path, layer, ROW_FIELDS)
            out.setdefault(layer, []).append(layer_block(t, docs[-1], int(budget)))
    return TrainingRows(budget=int(budget), docs=tuple(docs), layers=out)


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------


def _member_mask(kept: torch.Tensor, n_keys: int) -> torch.Tensor:
    """[.., s] positions (-1 = none) -> [.., N] boolean membership."""
    mask = torch.zeros(*kept.shape[:-1], n_keys + 1, dtype=torch.bool, device=kept.device)
    mask.scatter_(-1, torch.where(kept >= 0, kept, n_keys), True)
    return mask[..., :n_keys]


def threshold_loss(scores: torch.Tensor, bal: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Mean over rows with a target of sum_{k visible, not in A_bal} softplus(s_k - min_{j in A_bal} s_j).

    scores, logits [..,N] (-inf: not visible, contributes softplus(-inf) = 0; keys at the zero-mass
    floor contribute ~0 and are no positives), bal [..,s] positions (-1 = none).
    """
    positive = _member_mask(bal, scores.shape[-1]) & (logits > ZERO_MASS_LOGIT / 2)
    weakest = torch.where(positive, scores, torch.full_like(scores, torch.inf)).amin(-1, keepdim=True)
    negative = ~positive & torch.isfinite(scores)
    gap = torch.where(negative, scores - torch.where(torch.isfinite(weakest), weakest, 0.0), -torch.inf)
    has = positive.any(-1)
    return (torch.nn.functional.softplus(gap).sum(-1) * has).sum() / has.sum().clamp(min=1)


def block_loss(block: RowBlock, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The surrogate on one block at alpha = 1: score = logit + (U q)^T (V k) over all keys
    (float32: training needs no float64 ties)."""
    scores = block.logits.to(u.dtype) + bilinear(block.query, block.keys, u, v)
    return threshold_loss(scores, block.bal, block.logits)


def layer_loss(blocks: Sequence[RowBlock], u: torch.Tensor, v: torch.Tensor, weight_decay: float) -> torch.Tensor:
    """The blocks' mean surrogate plus weight_decay * (||U||^2 + ||V||^2) / 2."""
    data = sum(block_loss(b, u, v) for b in blocks) / len(blocks)
    return data + 0.5 * weight_decay * (u.square().sum() + v.square().sum())


def train_layer(
    blocks: Sequence[RowBlock], u0: torch.Tensor, v0: torch.Tensor, steps: int, lr: float, weight_decay: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, list[float]]:
    """Full-batch Adam on one layer from (U0, V0); returns (U, V, the loss before each step and
    after the last)."""
    u = u0.clone().requires_grad_(True)
    v = v0.clone().requires_grad_(True)
    opt = torch.optim.Adam([u, v], lr=lr)
    history = []
    for _ in range(int(steps)):
        opt.zero_grad()
        loss = layer_loss(blocks, u, v, weight_decay)
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    with torch.no_grad():
        history.append(float(layer_loss(blocks, u, v, weight_decay)))
    return u.detach(), v.detach(), history


def train(
    rows: TrainingRows,
    rank: int = RANK,
    steps: int = 200,
    lr: float = 1e-2,
    seed: int = 0,
    weight_decay: float = 0.0,
    init: ProbeParams | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[ProbeParams, dict[int, list[float]]]:
    """Train U, V per layer on the rows' balancing targets; returns (params at alpha = 1, per-layer
    loss history).  Deterministic for a seed (fixed initialisation; full-batch Adam).  ``log``, if
    given, receives one line per trained layer (its loss before and after, and its seconds)."""
    torch.manual_seed(int(seed))
    start = init if init is not None else init_params(rows.shapes(), rank, rows.budget, seed, rows.docs)
    u, v, histories = {}, {}, {}
    for n, (layer, blocks) in enumerate(sorted(rows.layers.items()), start=1):
        began = time.perf_counter()
        u[layer], v[layer], histories[layer] = train_layer(blocks, *start.layer(layer), steps, lr, weight_decay)
        if log is not None:
            h = histories[layer]
            log(
                f"layer {layer} ({n} of {len(rows.layers)}): loss {h[0]:.4g} -> {h[-1]:.4g} in {time.perf_counter() - began:.1f} s"
            )
    info = {
        "steps": int(steps),
        "lr": float(lr),
        "seed": int(seed),
        "weight_decay": float(weight_decay),
        "final_loss": {str(k): h[-1] for k, h in histories.items()},
        "initial_loss": {str(k): h[0] for k, h in histories.items()},
    }
    params = ProbeParams(u=u, v=v, rank=rank, budget=rows.budget, alpha=1.0, train_docs=rows.docs, info=info)
    return params, histories


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SwapRecall:
    """Swap recall and companions over rows.

    ``recall``: sum over swap rows of |kept_probe ∩ (A_bal \\ A*_s)| / sum of |A_bal \\ A*_s|
    (pooled over the swapped-in keys); ``row_recall``: the same ratio averaged per swap row;
    ``precision``: of the keys the probe adds beyond A*_s, the share in A_bal; ``stay``: the share
    of no-swap rows where the probe keeps exactly A*_s.
    """

    recall: float
    row_recall: float
    precision: float
    stay: float
    swap_rows: int
    rows: int
    swapped_in: int


def _ratio(num, den) -> float:
    return float(num) / float(den) if den else float("nan")


def swap_recall(kept_probe, kept_top, kept_bal) -> SwapRecall:
    """Swap recall of `kept_probe` against balancing, all [..., s] position sets (-1 = none)."""
    probe, top, bal = (
        torch.as_tensor(np.asarray(k)).reshape(-1, np.shape(k)[-1]) for k in (kept_probe, kept_top, kept_bal)
    )
    wanted = _new_mask(bal, top)  # A_bal \ A*_s
    hit = wanted & ~_new_mask(bal, probe)  # ... that the probe keeps
    n_wanted = wanted.sum(-1)
    swap_rows = n_wanted > 0
    added = _new_mask(probe, top)  # kept_probe \ A*_s
    good = added & ~_new_mask(probe, bal)
    still = (added.sum(-1) == 0) & ~swap_rows
    return SwapRecall(
        recall=_ratio(hit.sum(), n_wanted.sum()),
        row_recall=float((hit.sum(-1)[swap_rows] / n_wanted[swap_rows]).mean()) if swap_rows.any() else float("nan"),
        precision=_ratio(good.sum(), added.sum()),
        stay=_ratio(still.sum(), (~swap_rows).sum()),
        swap_rows=int(swap_rows.sum()),
        rows=int(probe.shape[0]),
        swapped_in=int(n_wanted.sum()),
    )


def rows_selection(
    rows: TrainingRows, params: ProbeParams, alpha: float | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(probe, top-mass, balancing) kept sets of every row, stacked [rows, s]; alpha defaults to
    the probe's own."""
    a = params.alpha if alpha is None else alpha
    picked, tops, bals = [], [], []
    for layer, blocks in sorted(rows.layers.items()):
        for b in blocks:
            picked.append(
                probe_select(b.query, b.keys, b.logits, params.layer(layer), a, rows.budget).reshape(-1, rows.budget)
            )
            tops.append(b.top.reshape(-1, rows.budget))
            bals.append(b.bal.reshape(-1, rows.budget))
    return torch.cat(picked), torch.cat(tops), torch.cat(bals)


def evaluate(rows: TrainingRows, params: ProbeParams, alpha: float | None = None) -> SwapRecall:
    """Swap recall of the probe on every row of `rows`."""
    return swap_recall(*rows_selection(rows, params, alpha))
