"""Consistency post-processing of unbiased frequency estimates.

Unbiased estimates can be negative and need not sum to one. Wang, Lopuhaä-Zwakenberg,
Li, Škorić and Li, "Locally Differentially Private Frequency Estimation with
Consistency" (NDSS 2020) compare several repairs; two are offered here, and the raw
unbiased estimate is always returned next to the repaired one.

* ``norm-sub`` (their Norm-Sub, §IV): set negative estimates to 0 and subtract the same
  δ from the positive ones, repeating until all are non-negative and they sum to 1.
* ``simplex``: the Euclidean projection onto the probability simplex (Duchi et al.,
  ICML 2008, sort-based). The paper shows Norm-Sub solves this constrained least-squares
  problem, so both give the same vector; they are computed independently here and
  the tests check that they agree.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray

PostProcess = Literal["none", "norm-sub", "simplex"]
POSTPROCESS_METHODS: tuple[PostProcess, ...] = ("none", "norm-sub", "simplex")


def norm_sub(estimate: FloatArray, total: float = 1.0) -> FloatArray:
    """Norm-Sub: zero the negatives, shift the positives by a common δ to sum to ``total``."""
    f = np.asarray(estimate, dtype=np.float64).copy()
    positive = np.ones(f.size, dtype=bool)
    for _ in range(f.size + 1):
        delta = (total - f[positive].sum()) / positive.sum()
        shifted = np.where(positive, f + delta, 0.0)
        now_negative = positive & (shifted < 0.0)
        if not now_negative.any():
            return shifted
        positive &= ~now_negative
    raise AssertionError("Norm-Sub did not converge")  # pragma: no cover - at most d rounds


def project_to_simplex(estimate: FloatArray, total: float = 1.0) -> FloatArray:
    """Euclidean projection of ``estimate`` onto ``{x >= 0, sum x = total}`` (Duchi et al. 2008)."""
    v = np.asarray(estimate, dtype=np.float64)
    projected: FloatArray = project_rows_to_simplex(v[None, :], total)[0]
    return projected


def project_rows_to_simplex(rows: FloatArray, total: float = 1.0) -> FloatArray:
    """:func:`project_to_simplex` of every row of an ``r × d`` matrix, vectorised.

    Sort each row in decreasing order ``u``; ``ρ`` is the last (0-based) index with
    ``u_ρ > (Σ_{i≤ρ} u_i − total)/(ρ + 1)``; the projection is ``max(v − θ, 0)`` with
    ``θ = (Σ_{i≤ρ} u_i − total)/(ρ + 1)``.
    """
    v = np.asarray(rows, dtype=np.float64)
    u = -np.sort(-v, axis=1)
    cumulative = np.cumsum(u, axis=1) - total
    ranks = np.arange(1, v.shape[1] + 1)
    positive = u - cumulative / ranks > 0
    rho = v.shape[1] - 1 - np.argmax(positive[:, ::-1], axis=1)
    theta = cumulative[np.arange(v.shape[0]), rho] / (rho + 1)
    projected: FloatArray = np.maximum(v - theta[:, None], 0.0)
    return projected


def postprocess(estimate: FloatArray, method: str) -> FloatArray:
    """Apply the named post-processing (``none`` returns a copy of the estimate)."""
    if method == "none":
        return np.asarray(estimate, dtype=np.float64).copy()
    if method == "norm-sub":
        return norm_sub(estimate)
    if method == "simplex":
        return project_to_simplex(estimate)
    raise InvalidQueryError(
        f"unknown post-processing {method!r}; choose one of {', '.join(POSTPROCESS_METHODS)}"
    )
