"""The repair of negative counts (ldp_shared.analyses.naive_bayes.repair)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses import naive_bayes as nb


def test_posterior_mean_repair() -> None:
    sigma = 10.0
    counts = np.array([1000.0, 30.0, 0.0, -10.0, -100.0, -299.0, -301.0, -5000.0])
    repaired = nb.repair_counts(counts, np.full(counts.size, sigma), "posterior-mean")
    assert repaired[0] == pytest.approx(1000.0)  # a clear count stays
    assert repaired[2] == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=1e-12)
    assert np.all(repaired > 0) and np.all(np.diff(repaired) < 0)  # positive, monotone
    # continuous across the asymptotic branch at N̂/σ = -30
    assert repaired[5] == pytest.approx(repaired[6], rel=0.02)
    assert repaired[7] == pytest.approx(sigma**2 / 5000, rel=1e-3)  # ≈ σ²/|N̂|
    # no noise: the count itself; clamp: max(N̂, 0)
    exact = nb.repair_counts(np.array([3.0, 0.0]), np.zeros(2), "posterior-mean")
    assert exact.tolist() == [3.0, 0.0]
    assert nb.repair_counts(counts, np.full(counts.size, sigma), "clamp").tolist() == [
        1000.0,
        30.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ]
