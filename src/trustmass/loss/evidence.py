"""What the batched selectors read: one layer's attention rows and the evidence beside them.

``LayerRows`` holds, for every query head h and row m of one layer, the exact attention row
``p[h, m, :]`` over all N cached keys, the row's absolute query position ``i = positions[h, m]``
(it sees keys ``0..i``; keys beyond it and keys outside a sliding window carry ``p = 0``), the
layer's keys and values per KV head (query head h reads KV head ``h // group``) and, where a rule
needs them, the row's query, H2O's accumulated column mass ``sum_{t<=i} P[t, :]`` and SnapKV's
window sums ``sum_{t=i-w+1..i} P[t, :]``.

It is the batched counterpart of ``core.selectors.SelectorInput``: row ``(h, m)`` restricted to
keys ``0..i`` is ``SelectorInput.from_layer`` of the same layer.  ``from_layer`` builds it from a
capture shard's layer (``contracts.shards.read_layer``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from trustmass.core.config_conflict import ConfigConflict
from trustmass.core.windows import SNAPKV_WINDOWS


def _tensor(x, dtype) -> torch.Tensor | None:
    if x is None:
        return None
    return x.to(dtype) if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x), dtype=dtype)


@dataclass(frozen=True, eq=False)
class LayerRows:
    """M rows per query head of one layer (shapes in the field comments; Hq = group * Hkv)."""

    p: torch.Tensor  # float32 [Hq, M, N] exact attention rows
    positions: torch.Tensor  # int64 [Hq, M] query position i of each row (sees keys 0..i)
    keys: torch.Tensor  # float32 [Hkv, N, d] post-RoPE keys as cached
    values: torch.Tensor  # float32 [Hkv, N, d]
    query: torch.Tensor | None = None  # float32 [Hq, M, d] (Quest)
    acc_mass: torch.Tensor | None = None  # float32 [Hq, M, N] (H2O)
    window_sums: dict | None = None  # {w: float32 [Hq, M, N]} (SnapKV; w = 1 is p itself)

    def __post_init__(self):
        fix = object.__setattr__
        fix(self, "p", _tensor(self.p, torch.float32))
        fix(self, "positions", _tensor(self.positions, torch.int64))
        fix(self, "keys", _tensor(self.keys, torch.float32))
        fix(self, "values", _tensor(self.values, torch.float32))
        fix(self, "query", _tensor(self.query, torch.float32))
        fix(self, "acc_mass", _tensor(self.acc_mass, torch.float32))
        if self.window_sums is not None:
            fix(self, "window_sums", {int(w): _tensor(s, torch.float32) for w, s in self.window_sums.items()})
        self._check_shapes()

    def _check_shapes(self) -> None:
        if self.p.ndim != 3:
            raise ValueError(f"LayerRows.p must be [Hq, M, N]; got {tuple(self.p.shape)}")
        n_q, m, n = self.p.shape
        n_kv, d = self.values.shape[0], self.values.shape[-1]
        if n_kv == 0 or n_q % n_kv:
            raise ValueError(f"{n_q} query heads do not divide into {n_kv} KV heads")
        want = {
            "positions": (n_q, m),
            "keys": (n_kv, n, self.keys.shape[-1]),
            "values": (n_kv, n, d),
            "query": (n_q, m, self.keys.shape[-1]),
            "acc_mass": (n_q, m, n),
        }
        for name, shape in want.items():
            got = getattr(self, name)
            if got is not None and tuple(got.shape) != shape:
                raise ValueError(f"LayerRows.{name} must have shape {shape}; got {tuple(got.shape)}")
        for w, sums in (self.window_sums or {}).items():
            if tuple(sums.shape) != (n_q, m, n):
                raise ValueError(f"LayerRows.window_sums[{w}] must have shape {(n_q, m, n)}; got {tuple(sums.shape)}")
        if self.positions.numel() and (int(self.positions.min()) < 0 or int(self.positions.max()) >= n):
            raise ValueError(f"LayerRows.positions must lie in 0..{n - 1}")

    # -- sizes -----------------------------------------------------------------------------------
    @property
    def n_heads(self) -> int:
        return int(self.p.shape[0])

    @property
    def n_rows(self) -> int:
        """M, the rows per query head."""
        return int(self.p.shape[1])

    @property
    def n_cache(self) -> int:
        """N, the keys in the cache."""
        return int(self.p.shape[2])

    @property
    def group(self) -> int:
        """Query heads per KV head (Hq // Hkv)."""
        return self.n_heads // int(self.values.shape[0])

    # -- flat views: R = Hq * M rows, head-major (the rows of one KV group are contiguous) ----------
    def flat(self, x: torch.Tensor) -> torch.Tensor:
        """[Hq, M, ...] -> [R, ...]."""
        return x.reshape(self.n_heads * self.n_rows, *x.shape[2:])

    @property
    def n_visible(self) -> torch.Tensor:
        """int64 [R]: keys each row sees, i + 1."""
        return self.flat(self.positions) + 1

    @property
    def visible(self) -> torch.Tensor:
        """bool [R, N]: key j visible to the row (j <= i)."""
        return torch.arange(self.n_cache, device=self.p.device) <= self.flat(self.positions)[:, None]

    def window_sum(self, w: int) -> torch.Tensor:
        """float32 [R, N]: sum_{t=i-w+1..i} P[t, :]; w = 1 is the row itself (as SelectorInput.window_sum)."""
        sums = self.window_sums or {}
        if w in sums:
            return self.flat(sums[w])
        if w == 1:
            return self.flat(self.p)
        raise ConfigConflict(
            f"no window sum for w={w}; LayerRows.window_sums holds {sorted(sums)}; fix: add {w} to capture.windows",
            fields=("capture.windows",),
        )

    def grouped(self, x: torch.Tensor) -> torch.Tensor:
        """[R, ...] -> [Hkv, group * M, ...]: the flat rows by KV head (for batched products)."""
        return x.reshape(int(self.values.shape[0]), self.group * self.n_rows, *x.shape[1:])

    def ungrouped(self, x: torch.Tensor) -> torch.Tensor:
        """[Hkv, N, ...] -> [R, N, ...]: a per-KV-head tensor repeated for each flat row."""
        n_kv = x.shape[0]
        return x[:, None].expand(n_kv, self.group * self.n_rows, *x.shape[1:]).reshape(-1, *x.shape[1:])

    @property
    def kv_of_row(self) -> torch.Tensor:
        """int64 [R]: the KV head each flat row reads."""
        return torch.arange(self.n_heads, device=self.p.device).repeat_interleave(self.n_rows) // self.group

    def gather_kv(
        self, kv_tensor: torch.Tensor, index: torch.Tensor, which: torch.Tensor | None = None
    ) -> torch.Tensor:
        """kv_tensor[kv(r), index[r, k]] for the flat rows r in `which` (default all): [Hkv, N, d],
        int64 [r, K] in 0..N-1 -> [r, K, d]."""
        n_kv, n = kv_tensor.shape[:2]
        kv = self.kv_of_row if which is None else self.kv_of_row[which]
        return kv_tensor.reshape(n_kv * n, -1)[kv[:, None] * n + index]

    def first_rows(self) -> LayerRows:
        """Row 0 of every query head alone (M = 1): the eviction-time rows of the cache-faithful
        reading."""
        return LayerRows(
            p=self.p[:, :1],
            positions=self.positions[:, :1],
            keys=self.keys,
            values=self.values,
            query=None if self.query is None else self.query[:, :1],
            acc_mass=None if self.acc_mass is None else self.acc_mass[:, :1],
            window_sums=None if self.window_sums is None else {w: x[:, :1] for w, x in self.window_sums.items()},
        )

    def heads(self, chosen: torch.Tensor) -> LayerRows:
        """The rows of the query heads where `chosen` (bool [Hq]) is set, each with its own copy of
        its KV head's keys and values (group 1): a rule on them chooses what it chooses on those
        heads of the whole layer (no rule looks across heads)."""
        index = chosen.nonzero()[:, 0]
        kv = index // self.group

        def pick(x):
            return None if x is None else x[index]

        return LayerRows(
            p=self.p[index],
            positions=self.positions[index],
            keys=self.keys[kv],
            values=self.values[kv],
            query=pick(self.query),
            acc_mass=pick(self.acc_mass),
            window_sums=None if self.window_sums is None else {w: x[index] for w, x in self.window_sums.items()},
        )

    # -- from a capture shard ------------------------------------------------------------------
    @classmethod
    def from_layer(cls, t: dict, windows: tuple[int, ...] = SNAPKV_WINDOWS) -> LayerRows:
        """One layer of a capture shard (``shards.read_layer``: positions [Hkv, R], p/acc_mass
        [Hq, R, N], window_sums [Hq, R, W, N], query [Hq, R, d], keys/values [Hkv, N, d]); the KV
        group's positions are repeated for each of its query heads."""
        n_q, n_kv = t["p"].shape[0], t["values"].shape[0]
        sums = t.get("window_sums")
        return cls(
            p=t["p"],
            positions=np.repeat(np.asarray(t["positions"]), n_q // n_kv, axis=0),
            keys=t["keys"],
            values=t["values"],
            query=t.get("query"),
            acc_mass=t.get("acc_mass"),
            window_sums=None if sums is None else {int(w): sums[:, :, k] for k, w in enumerate(windows)},
        )
