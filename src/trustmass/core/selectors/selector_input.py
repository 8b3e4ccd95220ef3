"""What a rule reads: one captured attention row and the evidence capture stored beside it.

``SelectorInput`` holds the row's masses ``p`` over its keys ``0..i`` and, where a rule needs them,
the KV head's keys and values, the row's query, H2O's accumulated column mass, SnapKV's window sums
and the KV group's rows at the same position.  Derived views (float64 copies, the operator instance
over the positive-mass keys, the dense output) are cached, so a rule run at every budget converts
and scores once per row.  ``from_layer`` cuts one row out of a capture shard's layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.operator import Instance
from trustmass.core.windows import SNAPKV_WINDOWS


@dataclass(frozen=True, eq=False)
class SelectorInput:
    """One attention row at query position i = n_keys - 1, over its keys 0..i.

    Only ``p`` is required; a rule reading a missing field fails with a clear error.  ``p`` may
    hold zeros (keys outside a sliding window, float32 underflow): rules built on the operator
    work on the positive-mass keys and pad with zero-mass positions, which cannot change ``es``.
    """

    p: np.ndarray  # (N,) the row's attention masses P[i, 0..i]
    values: np.ndarray | None = None  # (N, d) values of the row's KV head
    keys: np.ndarray | None = None  # (N, d_k) post-RoPE keys as cached
    query: np.ndarray | None = None  # (d_k,) the row's query (post-RoPE, post-QK-norm)
    acc_mass: np.ndarray | None = None  # (N,) sum_{t<=i} P[t, :]
    window_sums: np.ndarray | None = None  # (len(windows), N) sum_{t=i-w+1..i} P[t, :]
    windows: tuple[int, ...] = SNAPKV_WINDOWS
    group_rows: np.ndarray | None = None  # (g, N) the KV group's rows at position i (this row among them)

    def __post_init__(self):
        p = np.asarray(self.p)
        if p.ndim != 1 or p.shape[0] == 0:
            raise ValueError(f"p must be a nonempty 1-D row; got shape {p.shape}")
        n = p.shape[0]
        for name, want in (
            ("values", (n, None)),
            ("keys", (n, None)),
            ("acc_mass", (n,)),
            ("window_sums", (len(self.windows), n)),
            ("group_rows", (None, n)),
        ):
            arr = object.__getattribute__(self, name)
            if arr is None:
                continue
            shape = np.shape(arr)
            if len(shape) != len(want) or any(w is not None and w != g for w, g in zip(want, shape)):
                raise ValueError(f"SelectorInput.{name} must have shape {want} (None = any) for {n} keys; got {shape}")
        query = object.__getattribute__(self, "query")
        keys = object.__getattribute__(self, "keys")
        if query is not None and keys is not None and np.shape(query) != (np.shape(keys)[1],):
            raise ValueError(f"query must be ({np.shape(keys)[1]},) like a key; got {np.shape(query)}")

    # -- what every rule may read without declaring evidence --------------------------------
    @property
    def n_keys(self) -> int:
        return int(np.shape(object.__getattribute__(self, "p"))[0])

    @property
    def position(self) -> int:
        """The query position i (the row sees keys 0..i)."""
        return self.n_keys - 1

    # -- derived evidence ---------------------------------------------------------------------
    def window_sum(self, w: int) -> np.ndarray:
        """sum_{t=i-w+1..i} P[t, :]; w = 1 is the row itself."""
        if w == 1 and 1 not in self.windows:
            return np.asarray(self.p, dtype=np.float64)
        if self.window_sums is None:
            raise ValueError("this rule needs SnapKV window sums (SelectorInput.window_sums)")
        if w not in self.windows:
            raise ConfigConflict(
                f"no window sum for w={w}; captured windows are {self.windows}; fix: add {w} to capture.windows",
                fields=("capture.windows",),
            )
        return np.asarray(self.window_sums[self.windows.index(w)], dtype=np.float64)

    # cached float64 views: a rule run at every budget converts and scores once per row
    @cached_property
    def p64(self) -> np.ndarray:
        return np.asarray(self.p, dtype=np.float64)

    @cached_property
    def keys64(self) -> np.ndarray:
        if self.keys is None:
            raise ValueError("this rule needs the row's keys (SelectorInput.keys)")
        return np.asarray(self.keys, dtype=np.float64)

    @cached_property
    def query64(self) -> np.ndarray:
        if self.query is None:
            raise ValueError("this rule needs the row's query (SelectorInput.query)")
        return np.asarray(self.query, dtype=np.float64)

    @cached_property
    def query_scores(self) -> np.ndarray:
        """q . k_j for every key (the query's logits before scaling)."""
        return self.keys64 @ self.query64

    @cached_property
    def residuals(self) -> np.ndarray:
        """p_j (v_j - mu) per position (p as captured, mu the renormalised dense output)."""
        if self.values is None:
            raise ValueError("this rule needs the row's values (SelectorInput.values)")
        return self.p64[:, None] * (np.asarray(self.values, dtype=np.float64) - self.dense_output)

    @cached_property
    def instance_index(self) -> np.ndarray:
        """Position -> index among the positive-mass keys (the instance), -1 for zero mass."""
        index = np.full(self.n_keys, -1, dtype=np.int64)
        index[self.positive] = np.arange(self.positive.shape[0])
        return index

    @cached_property
    def positive(self) -> np.ndarray:
        """Positions with p > 0 (the operator's keys)."""
        return np.flatnonzero(np.asarray(self.p) > 0)

    @cached_property
    def instance(self) -> Instance:
        """The operator instance over the positive-mass keys, p renormalised in float64."""
        if self.values is None:
            raise ValueError("this rule needs the row's values (SelectorInput.values)")
        p = np.asarray(self.p, dtype=np.float64)[self.positive]
        return Instance.from_arrays(p / p.sum(), np.asarray(self.values, dtype=np.float64)[self.positive])

    @cached_property
    def dense_output(self) -> np.ndarray:
        """mu = sum_j p_j v_j (p renormalised in float64)."""
        return self.instance.mu

    def on_positions(self, kept_in_instance: np.ndarray, budget: int) -> np.ndarray:
        """Instance indices -> positions, padded with zero-mass positions (ascending) up to the budget."""
        kept = self.positive[np.asarray(kept_in_instance, dtype=np.int64)]
        short = min(int(budget), self.n_keys) - kept.shape[0]
        if short > 0:
            zero = np.setdiff1d(np.arange(self.n_keys), self.positive)
            kept = np.concatenate((kept, zero[:short]))
        return np.sort(kept)

    @classmethod
    def from_layer(cls, t: dict, head: int, r: int, windows: tuple[int, ...] = SNAPKV_WINDOWS) -> SelectorInput:
        """Row r of query head `head` from one layer of a capture shard (numpy arrays keyed as in
        ``shards.read_layer``: positions [Hkv,R], p/acc_mass [Hq,R,N], window_sums [Hq,R,W,N],
        query [Hq,R,d], keys/values [Hkv,N,d])."""
        n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
        group = n_q // n_kv
        kv = head // group
        i = int(t["positions"][kv][r])
        heads = slice(kv * group, (kv + 1) * group)
        return cls(
            p=t["p"][head, r, : i + 1],
            values=t["values"][kv, : i + 1],
            keys=t["keys"][kv, : i + 1],
            query=t["query"][head, r] if "query" in t else None,
            acc_mass=t["acc_mass"][head, r, : i + 1] if "acc_mass" in t else None,
            window_sums=t["window_sums"][head, r, :, : i + 1] if "window_sums" in t else None,
            windows=tuple(windows),
            group_rows=t["p"][heads, r, : i + 1],
        )
