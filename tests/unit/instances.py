"""Random small instances shared by the property tests (seeded: every failure is replayable)."""

import numpy as np

from trustmass.core.operator import Instance

DIMS = (1, 2, 3, 8)


def random_instance(seed: int, n: int | None = None, d: int | None = None) -> Instance:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15)) if n is None else n
    d = int(rng.choice(DIMS)) if d is None else d
    temperature = rng.choice([0.3, 1.0, 3.0])
    logits = rng.standard_normal(n) * temperature
    p = np.exp(logits - logits.max())
    v = rng.standard_normal((n, d)) * rng.choice([0.1, 1.0, 10.0])
    return Instance.from_arrays(p / p.sum(), v)


def random_cases(count: int, base: int = 0):
    """(seed, d) pairs covering every d in DIMS."""
    return [(base + i, DIMS[i % len(DIMS)]) for i in range(count)]
