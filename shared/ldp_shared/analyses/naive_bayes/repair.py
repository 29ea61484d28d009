"""Repair of negative counts before smoothing (step 3).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019). Raw estimates can be negative,
and a count whose truth is 0 is estimated as noise around 0. Each count ``N̂`` with
standard error ``σ`` is repaired to its posterior mean under a flat prior on ``N ≥ 0``
and normal noise (the truncated-normal mean, no tuning parameter),

    R(N̂, σ) = E[N | N̂, N ≥ 0] = N̂ + σ·φ(N̂/σ)/Φ(N̂/σ)

(about ``N̂`` for a clear count, ``0.8σ`` for ``N̂ = 0``, small and positive for a
negative ``N̂``), or, with ``repair="clamp"``, to ``max(N̂, 0)``.

``repair="norm-sub"`` makes the tables consistent instead of repairing cells one by one
(Norm-Sub of Wang, Lopuhaä-Zwakenberg, Li, Škorić and Li, "Locally Differentially
Private Frequency Estimation with Consistency", NDSS 2020, §IV, which equals the
Euclidean projection onto the scaled simplex): the class counts become the closest
non-negative vector summing to ``n``, and each class's row of a feature's table the
closest non-negative vector summing to that class's share of the feature's ``n_j``
reporters, ``Σ_v N(v, c) = n_j·N(c)/n``. A cell whose true count is 0 then stays at
exactly 0 more often than under the posterior mean (which lifts it by about 0.8σ), and
the mass taken from the negative cells comes off the others instead of being created.

:data:`FLOOR` is the smallest smoothed count; :func:`smoothing_rule` states the formulas
in every model.
"""

from __future__ import annotations

import math

import numpy as np

from ldp_shared.analyses.postprocess import norm_sub
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.wire.naive_bayes import CountRepair

FLOOR = 1e-10
"""Smallest smoothed count: keeps every logarithm finite when ``α = 0`` meets a zero count
(scikit-learn raises its ``alpha`` to the same ``1e-10`` for the same reason)."""

REPAIR_RULES = {
    "posterior-mean": "R(N̂, σ) = N̂ + σ·φ(N̂/σ)/Φ(N̂/σ), the mean of N ≥ 0 given N̂ ~ Normal(N, σ²)",
    "clamp": "R(N̂, σ) = max(N̂, 0)",
    "norm-sub": (
        "R(N̂(c)) = max(N̂(c) + δ, 0) with δ such that Σ_c R = n;"
        " R(N̂(v,c)) = max(N̂(v,c) + δ_c, 0) with δ_c such that Σ_v R = n_j·R(N̂(c))/n"
        " (Norm-Sub, Wang et al. NDSS 2020)"
    ),
}


def smoothing_rule(repair: CountRepair) -> str:
    """The repair and smoothing formulas, as stated in a model."""
    return (
        f"{REPAIR_RULES[repair]}, σ the count's standard error; "
        "Ñ(v,c) = max(R(N̂(v,c), σ) + alpha, floor) per feature; "
        "Ñ(c) = max(R(N̂(c), σ), floor) for the prior; "
        "P(v|c) = Ñ(v,c)/Σ_v Ñ(v,c), P(c) = Ñ(c)/Σ_c Ñ(c)"
    )


_MILLS_ASYMPTOTIC_BELOW = -30.0


def _inverse_mills(t: float) -> float:
    """``φ(t)/Φ(t)`` for the standard normal, accurate far into the lower tail."""
    if t < _MILLS_ASYMPTOTIC_BELOW:
        x = -t  # Φ(-x) = φ(x)/x·(1 - 1/x² + 3/x⁴ - …), so φ/Φ = x + 1/x - 2/x³ + …
        return x + 1.0 / x - 2.0 / x**3
    pdf = math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    return pdf / (0.5 * math.erfc(-t / math.sqrt(2.0)))


def repair_counts(counts: FloatArray, stderr: FloatArray, method: CountRepair) -> FloatArray:
    """Non-negative counts from unbiased ones (step 3 of the module docstring)."""
    n_hat = np.asarray(counts, dtype=np.float64)
    if method == "clamp":
        clamped: FloatArray = np.maximum(n_hat, 0.0)
        return clamped
    if method != "posterior-mean":
        raise InvalidQueryError(
            f"unknown cell repair {method!r}; use posterior-mean or clamp (norm-sub repairs"
            " whole tables: consistent_class_counts, consistent_table)"
        )
    sigma = np.broadcast_to(np.asarray(stderr, dtype=np.float64), n_hat.shape)
    out = np.maximum(n_hat, 0.0)  # σ = 0: the count is exact
    for index in zip(*np.nonzero(sigma > 0.0), strict=True):
        s = float(sigma[index])
        est = float(n_hat[index])
        out[index] = max(est + s * _inverse_mills(est / s), 0.0)
    return out


def consistent_class_counts(counts: FloatArray, n: int) -> FloatArray:
    """Norm-Sub of the class counts: non-negative, summing to the ``n`` reports."""
    return norm_sub(np.asarray(counts, dtype=np.float64), float(n))


def consistent_table(counts: FloatArray, n_j: int, class_share: FloatArray) -> FloatArray:
    """Norm-Sub of each class's row (``k × d``, class-major) to ``n_j·class_share[c]``."""
    rows = [
        norm_sub(row, float(n_j * share))
        for row, share in zip(np.asarray(counts, dtype=np.float64), class_share, strict=True)
    ]
    return np.vstack(rows)
