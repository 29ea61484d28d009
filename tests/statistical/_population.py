"""The population the open-domain statistical tests (flh, hcms) draw their devices from,
and their z-score tests; the devices of the longitudinal tests (l-grr, dbitflippm)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._stats import normal_two_sided_pvalue, variance_ratio_pvalue

HEAVY, LIGHT, SPREAD = 0.3, 0.02, 500
CANDIDATES = ["heavy", "light", "nobody"]
TESTS = 2 * len(CANDIDATES)  # mean and variance per candidate


@dataclass(frozen=True)
class Population:
    names: list[str]
    counts: NDArray[np.int64]

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def f2(self) -> float:
        return float(np.sum((self.counts / self.n) ** 2))

    @property
    def truth(self) -> NDArray[np.float64]:
        """The frequencies of :data:`CANDIDATES` (``nobody`` is held by no device)."""
        return np.array([self.counts[0] / self.n, self.counts[1] / self.n, 0.0])


def population(n: int) -> Population:
    """``heavy`` 30 %, ``light`` 2 %, the rest over :data:`SPREAD` strings (fixed counts)."""
    head = [round(HEAVY * n), round(LIGHT * n)]
    rest = n - sum(head)
    spread = [rest // SPREAD + (1 if i < rest % SPREAD else 0) for i in range(SPREAD)]
    names = ["heavy", "light"] + [f"word-{i:03d}" for i in range(SPREAD)]
    return Population(names, np.array(head + spread, dtype=np.int64))


def device_keys(count: int, seed: int) -> list[bytes]:
    """``count`` devices' secrets (32 bytes each), reproducible from ``seed``."""
    raw = np.random.Generator(np.random.PCG64(seed)).integers(0, 256, size=(count, 32))
    return [row.astype(np.uint8).tobytes() for row in raw]


def fixed_population(frequencies: NDArray[np.float64], n: int) -> NDArray[np.int64]:
    """``n`` value indices holding exactly ``frequencies`` (which must give whole counts)."""
    counts = np.rint(frequencies * n).astype(np.int64)
    assert counts.sum() == n
    return np.repeat(np.arange(frequencies.size, dtype=np.int64), counts)


def pvalues(z: NDArray[np.float64]) -> list[float]:
    """Per candidate (column of ``z``): the p-value of mean 0, then of variance 1."""
    runs = z.shape[0]
    means = [normal_two_sided_pvalue(math.sqrt(runs) * float(np.mean(col))) for col in z.T]
    variances = [variance_ratio_pvalue(float(np.var(col, ddof=1)), 1.0, runs) for col in z.T]
    return means + variances
