"""The test helpers themselves: exact χ² tails against published table values."""

from __future__ import annotations

import math

import pytest

from ._stats import (
    chi2_gof,
    chi2_quantile,
    chi2_sf,
    normal_two_sided_pvalue,
    variance_ratio_pvalue,
    z_critical,
)

# (x, df, upper tail) from standard χ² tables (NIST/SEMATECH e-Handbook, 1.3.6.7.4),
# given there to three decimals.
TABLE = [
    (3.841, 1, 0.05),
    (10.828, 1, 0.001),
    (13.816, 2, 0.001),
    (7.815, 3, 0.05),
    (20.515, 5, 0.001),
    (29.588, 10, 0.001),
    (124.342, 100, 0.05),
    (149.449, 100, 0.001),
    (61.918, 100, 0.999),
]


@pytest.mark.parametrize(("x", "df", "tail"), TABLE)
def test_chi2_sf_matches_tables(x: float, df: int, tail: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(tail, rel=2e-3)


@pytest.mark.parametrize(("x", "df", "tail"), TABLE)
def test_chi2_quantile_inverts_sf(x: float, df: int, tail: float) -> None:
    # the tables round x to three decimals
    assert chi2_quantile(1.0 - tail, df) == pytest.approx(x, abs=5e-4)


def test_chi2_closed_forms() -> None:
    # df = 1: P(Z² ≥ x); df = 2: exponential with mean 2
    for x in (0.1, 1.0, 4.0, 25.0):
        assert chi2_sf(x, 1) == pytest.approx(normal_two_sided_pvalue(math.sqrt(x)), rel=1e-12)
        assert chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2.0), rel=1e-12)
    assert chi2_sf(0.0, 7) == 1.0


def test_z_critical() -> None:
    assert z_critical(0.05) == pytest.approx(1.959964, rel=1e-6)
    assert normal_two_sided_pvalue(z_critical(0.001)) == pytest.approx(0.001, rel=1e-9)


def test_gof_of_exact_expectation_is_zero() -> None:
    result = chi2_gof([25, 25, 50], [0.25, 0.25, 0.5])
    assert result.statistic == 0.0 and result.df == 2 and result.pvalue == 1.0


def test_gof_pools_small_cells() -> None:
    # expected counts 96, 2, 2: the two small cells are pooled into one of 4 (< 5), which
    # is then merged with the large one, leaving a single cell: nothing to test
    with pytest.raises(AssertionError):
        chi2_gof([96, 2, 2], [0.96, 0.02, 0.02])
    result = chi2_gof([90, 6, 4, 0], [0.9, 0.05, 0.03, 0.02])
    assert result.df == 2  # cells 90 | 5 | (3 + 2)


def test_variance_ratio_is_two_sided() -> None:
    assert variance_ratio_pvalue(1.0, 1.0, 200) > 0.5
    assert variance_ratio_pvalue(1.5, 1.0, 200) < 1e-4
    assert variance_ratio_pvalue(0.6, 1.0, 200) < 1e-4
