"""Ordinal summaries of a released frequency estimate: CDF, mean rank and median.

For an attribute whose values are ordered (ranks ``0..d-1``: the ordinal exponential
mechanism, the bins of a histogram), the frequency endpoint adds summaries of the raw
unbiased estimate ``f̂``, with errors from its covariance ``V`` under i.i.d. values
(:meth:`~ldp_shared.mechanisms.base.Randomizer.frequency_covariance`). Under the
``sample`` budget ``V`` is the covariance over the ``n_j`` reports that carried the
attribute: as an error of the frequencies among all ``n`` reporters it is conservative,
since ``n_j`` i.i.d. values vary at least as much about the distribution as about the
frequencies of the ``n``.

**Normalisation.** GRR's and the exponential mechanism's estimates sum to one exactly
(``1ᵀM⁻¹ = 1ᵀ``); unary encoding's need not, and its noisy total ``S = Σ f̂`` would make
the top of the CDF ``S`` instead of 1. The summaries therefore use ``g = f̂/S`` with the
delta-method covariance ``J V Jᵀ``, ``J = (I − g1ᵀ)/S``, which leaves GRR's and the
exponential mechanism's ``(f̂, V)`` unchanged (there ``S = 1`` and ``V1 = 0``). A total
``S <= 0`` (only possible with very few, very noisy reports) has no normalisation
(:class:`~ldp_shared.errors.InsufficientReportsError`).

Then (:mod:`ldp_shared.analyses.ibu`): the CDF ``G_k = Σ_{i<=k} g_i`` and its standard
errors; the mean rank ``Σ_k k·g_k``; the median rank interpolated within its value
(value ``k`` spread over ``[k − ½, k + ½]``), with delta-method errors. Intervals are
``value ± z·stderr``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ldp_shared.analyses.ibu import (
    CdfEstimate,
    Functional,
    mean_rank,
    median_rank,
    ordinal_cdf,
)
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.kernel import FloatArray


def normalised(estimate: ArrayLike, covariance: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(f̂/S, J V Jᵀ)`` with ``S = Σ f̂`` and ``J = (I − (f̂/S)1ᵀ)/S`` (see the module)."""
    f = np.asarray(estimate, dtype=np.float64)
    v = np.asarray(covariance, dtype=np.float64)
    total = float(f.sum())
    if not total > 0.0:
        raise InsufficientReportsError(
            f"the estimated frequencies sum to {total:.3g}: too few reports to normalise them"
        )
    g = f / total
    # J V Jᵀ without forming J: (V − g(1ᵀV) − (V1)gᵀ + (1ᵀV1) ggᵀ) / S²
    row = v.sum(axis=0)
    w = (v - np.outer(g, row) - np.outer(row, g) + row.sum() * np.outer(g, g)) / total**2
    return g, w


@dataclass(frozen=True)
class OrdinalSummary:
    """The CDF, mean rank and median rank of a normalised estimate, with errors."""

    cdf: CdfEstimate
    mean_rank: Functional
    median_rank: Functional


def ordinal_summary(estimate: ArrayLike, covariance: ArrayLike) -> OrdinalSummary:
    """The ordinal summaries of ``f̂`` with covariance ``V`` (normalised first)."""
    g, w = normalised(estimate, covariance)
    return OrdinalSummary(
        cdf=ordinal_cdf(g, w), mean_rank=mean_rank(g, w), median_rank=median_rank(g, w)
    )
