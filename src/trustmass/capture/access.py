"""Access-law evidence of one prefill (related-methods A.4 Stage I, A.7), without a T x T matrix.

The capture job (:mod:`trustmass.capture.prefill`) hands every layer's queries and keys, its sampled
positions and their H2O column mass to :meth:`AccessLaws.record_prefill`, then runs one greedy decode
step whose attention calls :meth:`AccessLaws.record`.  Per (layer, query head) this keeps, in
O(T d + rows T) memory:

* the cumulative attention ``C_i = sum_{t >= i} A[t, i]`` over every prefill row: the capture's own
  streamed column mass at the head's last sampled row ``r`` (``sum_{t <= r} A[t, :]``) plus the rows
  after it, computed exactly (``kernels.sampled_row_probs``, in blocks of ``block_rows`` rows);
* the sums of the last K rows for every configured K (``access_law.tail_rows`` and
  ``access_law.dilution_rows``) and the last row ``p_T``, from the same blocks;
* the first decode step's row ``p*`` over the T + 1 keys (the prompt and the decoded token's own),
  validated like every captured row: ``sum_j p*_j v_j`` must match the model's own head output
  (to within ``prefill.deviation_bound`` at the layer's largest ``sum_j p*_j |v_jc|``).

:meth:`AccessLaws.frame` turns them into the access records (:mod:`trustmass.contracts.access`): the
laws of :mod:`trustmass.core.access_law`, their total-variation distances to ``p_T`` and to ``p*``,
their mean key position (exposure bias) and their mass on the planted target.

**The planted target i*** (head-sum dilution, task contexts only; :func:`planted_target`): the
*answer-source tokens*, the longest run of the teacher-forced answer's tokens found inside the
context's first planted span (the earliest run on ties).  For ``niah_*`` that is the gold needle's
value (with the space token before it where the tokenizer splits one off); for ``vt`` the first
variable name of the chain, in its first statement ``VAR NAME = value.`` (the answer lists the
chain's names; the value itself is quoted in the question); for ``quote_qa`` the passage's
continuation the answer copies.  Every record of a document names its target (``target``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from trustmass import kernels
from trustmass.contracts.access import COLUMNS
from trustmass.core.access_law import count_debiased, mean_position, normalised, total_variation
from trustmass.core.config_conflict import ConfigConflict
from trustmass.sources.attention import trailing_row_probs

if TYPE_CHECKING:
    import polars as pl

__all__ = ["AccessLaws", "AccessOptions", "longest_common_run", "planted_target"]

#: rows per float32 partial sum (as in the kernels' streamed pass); partial sums add up in float64
SUM_ROWS = 32


@dataclass(frozen=True)
class AccessOptions:
    tail_rows: tuple[int, ...] = (8, 32, 64)  # K of the tail means
    dilution_rows: int = 64  # the last rows whose mass on the target m_h sums
    target: tuple[int, ...] = ()  # i*: key positions of the planted target (task contexts), else empty
    block_rows: int = (
        128  # rows per exact-row block (memory block_rows x T per head; 128 is fastest on CPU, as in the kernels)
    )

    @property
    def windows(self) -> tuple[int, ...]:
        """Every tail length kept: the tail means' and the dilution's."""
        return tuple(sorted({int(k) for k in self.tail_rows} | {int(self.dilution_rows)}))

    def check(self, n_tokens: int, where: str) -> None:
        widest = max(self.windows)
        if widest > n_tokens:
            raise ConfigConflict(
                f"{where}: access_law tail of {widest} rows (tail_rows {list(self.tail_rows)}, dilution_rows "
                f"{self.dilution_rows}) is longer than the {n_tokens}-token document; fix: at most {n_tokens}",
                fields=("access_law.tail_rows", "access_law.dilution_rows"),
            )
        if self.target and (min(self.target) < 0 or max(self.target) >= n_tokens):
            raise ValueError(
                f"{where}: planted target {self.target[0]}..{self.target[-1]} outside the {n_tokens}-token document"
            )


def longest_common_run(needle: Sequence[int], haystack: Sequence[int]) -> tuple[int, int]:
    """(start in ``haystack``, length) of the longest run of consecutive ``needle`` tokens found in
    ``haystack``; the earliest start on ties; (0, 0) when they share no token."""
    best, start = 0, 0
    previous = [0] * (len(haystack) + 1)
    for a in needle:
        current = [0] * (len(haystack) + 1)
        for j, b in enumerate(haystack, 1):
            if a == b:
                current[j] = previous[j - 1] + 1
                s = j - current[j]
                if current[j] > best or (current[j] == best and s < start):
                    best, start = current[j], s
        previous = current
    return start, best


def planted_target(record: Mapping, ids: np.ndarray) -> tuple[int, ...]:
    """i*: the answer-source tokens of a task context (module docstring); () for a plain document."""
    planted = record.get("planted") or []
    if not planted:
        return ()
    (a, b), (s, e) = record["answer"], planted[0]
    start, length = longest_common_run([int(x) for x in ids[a:b]], [int(x) for x in ids[s:e]])
    if length == 0:
        raise ValueError(
            f"{record.get('id')}: the answer's tokens ({a}..{b - 1}) share none with the first planted span "
            f"({s}..{e - 1}), so the context has no answer-source target; fix: rebuild the task documents"
        )
    return tuple(range(s + start, s + start + length))


def _runs(positions: Sequence[int]) -> str | None:
    """``263..265,270..270``: consecutive positions as inclusive runs."""
    if not positions:
        return None
    runs, first, prev = [], positions[0], positions[0]
    for p in list(positions[1:]) + [None]:
        if p is None or p != prev + 1:
            runs.append(f"{first}..{prev}")
            first = p
        prev = p
    return ",".join(runs)


@dataclass
class AccessLaws:
    """The access-law evidence of one document, filled during its capture (module docstring)."""

    options: AccessOptions
    prefill: dict = field(default_factory=dict)  # layer -> column_mass [Hq, T], tails [Hq, W, T], last [Hq, T], group
    decode: dict = field(default_factory=dict)  # layer -> p* [Hq, T + 1] (float64)
    deviations: list = field(default_factory=list)  # (layer, max |sum p* v - own output|) of the decode row
    scales: list = field(
        default_factory=list
    )  # (layer, max_{h,c} sum_j p*_j |v_jc|): the magnitude its bound scales with
    decode_token: int | None = None
    n_tokens: int | None = None
    seconds: float = 0.0  # time spent on the access laws during the capture (prefill blocks and the decode step)
    _logits_dtype: dict = field(default_factory=dict)

    def record_prefill(
        self,
        layer: int,
        q: torch.Tensor,
        k_per_head: torch.Tensor,
        positions: torch.Tensor,
        column_mass: torch.Tensor,
        group: int,
        **kw,
    ) -> None:
        """Complete C and the tails from the capture's column mass at each head's last sampled row.

        ``q``, ``k_per_head``: ``[Hq, T, d]``; ``positions``: ``[Hq, R]`` sampled rows; ``column_mass``:
        ``[Hq, R, T]`` (``sum_{t <= positions[h, r]} A[t, :]``); ``kw``: the kernels' scaling, softcap,
        window and logits_dtype.
        """
        started = time.perf_counter()
        n_q, n = q.shape[0], q.shape[1]
        self.n_tokens = n
        windows = self.options.windows
        last_sampled, which = positions.max(dim=1)
        column = column_mass[torch.arange(n_q, device=q.device), which].double()  # rows 0 .. last_sampled
        tails = torch.zeros(n_q, len(windows), n, dtype=torch.float64, device=q.device)
        final = torch.zeros(n_q, n, dtype=torch.float64, device=q.device)
        start = torch.clamp(last_sampled + 1, max=n - max(windows))  # the rows this head still needs
        tail_starts = torch.tensor([n - w for w in windows], device=q.device)
        step = self.options.block_rows
        for first in start.unique().tolist():
            heads = (start == first).nonzero().squeeze(1)
            q_h, k_h = q.index_select(0, heads), k_per_head.index_select(0, heads)
            for row0 in range(first, n, step):
                rows = torch.arange(row0, min(row0 + step, n), device=q.device)
                p = kernels.sampled_row_probs(q_h, k_h, rows.expand(heads.numel(), -1).contiguous(), **kw)  # [h, c, T]
                after = (rows.unsqueeze(0) > last_sampled[heads].unsqueeze(1)).float()  # the rows C still lacks
                in_tail = (rows.unsqueeze(0) >= tail_starts.unsqueeze(1)).float()  # [W, c]
                for s in range(0, rows.numel(), SUM_ROWS):  # float32 sums of at most SUM_ROWS rows, float64 across
                    part = p[:, s : s + SUM_ROWS]
                    column[heads] += torch.einsum("hc,hcn->hn", after[:, s : s + SUM_ROWS], part).double()
                    if bool(in_tail[:, s : s + SUM_ROWS].any()):
                        tails[heads] += torch.einsum("wc,hcn->hwn", in_tail[:, s : s + SUM_ROWS], part).double()
                if int(rows[-1]) == n - 1:
                    final[heads] = p[:, -1].double()
        self.prefill[layer] = {
            "column_mass": column.cpu().numpy(),
            "tails": tails.cpu().numpy(),
            "last": final.cpu().numpy(),
            "group": group,
        }
        self._logits_dtype[layer] = kw.get("logits_dtype")
        self.seconds += time.perf_counter() - started

    def record(self, module, query, key, value, output, scaling, softcap, window) -> None:
        """The decode step's attention call (the capture attention function's side effect): ``p*`` and its check
        (timed with the whole decode step by its driver)."""
        layer = int(module.layer_idx)
        q, k, v = query[0], key[0], value[0]  # [Hq, 1, d], [Hkv, T + 1, d]
        p = trailing_row_probs(q, k, float(scaling), softcap, window, self._logits_dtype.get(layer))[
            :, 0
        ]  # [Hq, T + 1]
        group = q.shape[0] // k.shape[0]
        values = v.float().repeat_interleave(group, dim=0)
        recomputed = torch.einsum("hn,hnd->hd", p, values)
        own = output[0, 0].float()  # [Hq, d]
        self.deviations.append((layer, float((recomputed - own).abs().max())))
        self.scales.append((layer, float(torch.einsum("hn,hnd->hd", p, values.abs()).max())))
        self.decode[layer] = p.double().cpu().numpy()

    @property
    def max_abs_deviation(self) -> float:
        return max((d for _, d in self.deviations), default=0.0)

    def laws(self, layer: int) -> dict[tuple[str, int | None], np.ndarray]:
        """Every law of one layer, ``[Hq, T]`` each, normalised: (law, K) -> array."""
        pre = self.prefill[layer]
        out = {("last", None): normalised(pre["last"])}
        for j, k in enumerate(self.options.windows):
            out[("tail", k)] = normalised(pre["tails"][:, j])
        out[("all", None)] = normalised(pre["column_mass"])
        out[("debiased", None)] = count_debiased(pre["column_mass"])
        if layer in self.decode:
            out[("decode", None)] = normalised(self.decode[layer][:, :-1])
        return out

    def frame(self, *, model: str, corpus: str, doc: str, doc_id: str, task: str | None = None) -> pl.DataFrame:
        """The access records of the document (:mod:`trustmass.contracts.access`)."""
        import polars as pl  # here, not at import: the capture's import chain stays torch and numpy only

        target = np.asarray(self.options.target, dtype=np.int64)
        columns: dict[str, list] = {name: [] for name in COLUMNS}
        for layer in sorted(self.prefill):
            laws = self.laws(layer)
            last, decode = laws[("last", None)], laws.get(("decode", None))
            n_q = last.shape[0]
            self_mass = self.decode[layer][:, -1] if layer in self.decode else np.full(n_q, np.nan)
            for (law, k), p in laws.items():
                values = {
                    "layer": [layer] * n_q,
                    "head": list(range(n_q)),
                    "kv_head": [h // self.prefill[layer]["group"] for h in range(n_q)],
                    "law": [law] * n_q,
                    "tail_rows": [k] * n_q,
                    "tv_last": total_variation(p, last).tolist(),
                    "tv_decode": total_variation(p, decode).tolist() if decode is not None else [None] * n_q,
                    "mean_position": mean_position(p).tolist(),
                    "target_mass": p[:, target].sum(axis=1).tolist() if target.size else [None] * n_q,
                    "decode_self_mass": self_mass.tolist(),
                }
                for name, vals in values.items():
                    columns[name] += vals
        rows = len(columns["layer"])
        constant = {
            "model": model,
            "corpus": corpus,
            "doc": doc,
            "doc_id": doc_id,
            "task": task,
            "target": _runs(self.options.target),
            "n_tokens": self.n_tokens,
            "decode_token": self.decode_token,
        }
        for name, value in constant.items():
            columns[name] = [value] * rows
        schema = {name: getattr(pl, dtype) for name, dtype in COLUMNS.items()}
        return pl.DataFrame(columns, schema=schema)
