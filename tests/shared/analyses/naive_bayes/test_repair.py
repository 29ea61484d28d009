"""The repair of negative counts (ldp_shared.analyses.naive_bayes.repair)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.analyses.naive_bayes.repair import consistent_class_counts, consistent_table
from ldp_shared.errors import InvalidQueryError


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


def test_norm_sub_tables_are_consistent() -> None:
    counts = np.array([[50.0, -20.0, 5.0, 10.0], [-3.0, 40.0, 30.0, -8.0]])
    share = np.array([0.25, 0.25])
    table = consistent_table(counts, 200, share)
    assert np.all(table >= 0.0)
    np.testing.assert_allclose(table.sum(axis=1), [50.0, 50.0], rtol=1e-12)
    # a common shift per row on the cells kept positive, the others exactly 0
    np.testing.assert_allclose(table, [[45.0, 0.0, 0.0, 5.0], [0.0, 30.0, 20.0, 0.0]], atol=1e-12)
    kept = table[1] > 0
    shift = table[1][kept] - counts[1][kept]
    np.testing.assert_allclose(shift, shift[0], rtol=1e-12)
    # already consistent: unchanged
    exact = np.array([[3.0, 0.0, 7.0]])
    np.testing.assert_allclose(consistent_table(exact, 10, np.array([1.0])), exact)
    priors = consistent_class_counts(np.array([120.0, -15.0, 900.0]), 1000)
    assert priors[1] == 0.0 and priors.sum() == pytest.approx(1000.0)


def test_cell_repair_refuses_norm_sub() -> None:
    with pytest.raises(InvalidQueryError):
        nb.repair_counts(np.array([1.0]), np.array([1.0]), "norm-sub")  # type: ignore[arg-type]
