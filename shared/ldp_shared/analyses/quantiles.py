"""Quantiles of a number from the estimated frequencies of its bins, with intervals.

A histogram attribute (:mod:`ldp_shared.mechanisms.histogram`) releases the frequencies
of ``B`` bins ``[e_k, e_{k+1})``. With ``g`` the normalised estimate and ``W`` its
covariance (:func:`ldp_shared.analyses.ordinal.normalised`), the CDF is estimated at the
edges, ``F(e_k) = Σ_{i<k} g_i``, and, taking the values spread uniformly within each bin,
between them: at ``x = e_k + t·(e_{k+1} − e_k)``, ``t ∈ [0, 1]``,

    F̂(x) = F(e_k) + t·g_k,   Var F̂(x) = a_k + 2t·b_k + t²·c_k,

with ``a_k = Var F(e_k)``, ``b_k = Cov(F(e_k), g_k)`` and ``c_k = Var g_k`` (all from
``W``). The ``q``-quantile is the first ``x`` where ``F̂(x) = q``: linear interpolation
within the bin whose edges' CDF first brackets ``q``.

**Interval: inverting the CDF's pointwise band** (Woodruff, JASA 1952). The interval is
every ``x`` at which the normal test of ``F(x) = q`` does not reject at the level asked,
``(F̂(x) − q)² <= z²·Var F̂(x)``. Within a bin both sides are quadratics in ``t``, so the
accepted ``t`` are bounded by ``0``, ``1`` and the roots of one quadratic; the interval
reported is the hull of the accepted points over all bins (it contains the estimate,
where the left side is 0). Why not the delta method, ``x̂ ± z·se(F̂(x̂))/density``: it
divides by the estimated density ``g_k/(e_{k+1} − e_k)``, which is noisiest exactly where
the bins are sparse, can turn negative, and gives symmetric intervals that ignore the
bin edges and can leave ``[lo, hi]``; the inverted band needs no density, follows the
CDF's shape, stays within ``[lo, hi]`` and covers at the level of the band at the true
quantile (Sitter and Wu, "A note on Woodruff confidence intervals for quantiles", 2001,
show it holds its level in the tails too).

**What is estimated.** Exactly the quantile of the *interpolated* CDF through the true
CDF at the edges. The true quantile lies in the same bin (the CDF at the edges is
estimated without bias), so the two agree when the values are uniform within that bin
and otherwise differ by less than its width: choose edges fine where the quantiles of
interest lie. Values outside ``[lo, hi]`` were clipped into the end bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ldp_shared.analyses.ordinal import normalised
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray, z_value

MAX_PROBABILITIES = 99


@dataclass(frozen=True)
class BinnedQuantile:
    """One quantile in value units, with its interval and the bin it falls in."""

    probability: float
    value: float
    ci_low: float
    ci_high: float
    bin: int


def check_probabilities(probabilities: ArrayLike) -> FloatArray:
    """The levels ``q``: 1 to :data:`MAX_PROBABILITIES` finite numbers in (0, 1)."""
    try:
        q = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidQueryError("quantile levels must be numbers in (0, 1)") from None
    if q.size == 0 or q.size > MAX_PROBABILITIES:
        raise InvalidQueryError(f"ask for 1 to {MAX_PROBABILITIES} quantile levels, got {q.size}")
    bad = q[~((q > 0.0) & (q < 1.0))]  # NaN fails both comparisons
    if bad.size:
        raise InvalidQueryError(f"quantile levels must lie in (0, 1), got {float(bad[0])!r}")
    return q


def _check_edges(edges: ArrayLike, bins: int) -> FloatArray:
    e = np.asarray(edges, dtype=np.float64)
    if e.shape != (bins + 1,) or not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
        raise InvalidQueryError(f"need {bins + 1} finite, strictly increasing bin edges")
    return e


def _accepted_range(
    alpha: FloatArray, beta: FloatArray, gamma: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Per bin, the smallest and largest ``t ∈ [0, 1]`` with ``αt² + βt + γ <= 0`` (NaN
    where none). An accepted stretch starts and ends at 0, 1 or a root."""
    disc = beta * beta - 4.0 * alpha * gamma
    root = np.sqrt(np.where(disc >= 0.0, disc, np.nan))
    s = -0.5 * (beta + np.copysign(root, beta))  # the stable form of the two roots
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.stack([s / alpha, gamma / s], axis=1)
    ends = np.stack([np.zeros_like(alpha), np.ones_like(alpha)], axis=1)
    end_ok = np.stack([gamma <= 0.0, alpha + beta + gamma <= 0.0], axis=1)
    candidates = np.concatenate([np.where(end_ok, ends, np.nan), roots], axis=1)
    candidates[~((candidates >= 0.0) & (candidates <= 1.0))] = np.nan
    return np.fmin.reduce(candidates, axis=1), np.fmax.reduce(candidates, axis=1)


def binned_quantiles(
    edges: ArrayLike,
    estimate: ArrayLike,
    covariance: ArrayLike,
    probabilities: ArrayLike,
    confidence: float = 0.95,
) -> list[BinnedQuantile]:
    """Quantiles at ``probabilities`` of a number binned at ``edges``, from the bins'
    estimated frequencies and their covariance, with inverted-band intervals at
    ``confidence`` (see the module)."""
    z = z_value(confidence)
    qs = check_probabilities(probabilities)
    g, w = normalised(estimate, covariance)
    e = _check_edges(edges, g.size)
    width = np.diff(e)
    cdf = np.concatenate([[0.0], np.cumsum(g)])
    cdf[-1] = 1.0  # the normalised total, without its rounding
    double = np.diagonal(np.cumsum(np.cumsum(w, axis=0), axis=1))  # Var F(e_{k+1})
    a = np.concatenate([[0.0], double[:-1]])
    b = np.concatenate([[0.0], np.diagonal(np.cumsum(w, axis=0)[:-1, 1:])])
    c = np.diagonal(w)
    out = []
    for q in qs:
        k = int(np.flatnonzero(cdf[1:] >= q)[0])  # F(e_k) < q <= F(e_{k+1}), so g_k > 0
        value = float(e[k] + (q - cdf[k]) / g[k] * width[k])
        offset = cdf[:-1] - q
        low_t, high_t = _accepted_range(
            g * g - z * z * c, 2.0 * (offset * g - z * z * b), offset * offset - z * z * a
        )
        ci_low = float(np.fmin.reduce(np.append(e[:-1] + low_t * width, value)))
        ci_high = float(np.fmax.reduce(np.append(e[:-1] + high_t * width, value)))
        out.append(BinnedQuantile(float(q), value, ci_low, ci_high, k))
    return out
