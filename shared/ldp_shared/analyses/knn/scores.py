"""Debiased class scores of query points, their standard errors, and the prediction.

Both protocols of this package end in the same place: for query ``i`` and class ``c`` a
score ``ŝ_ic``, an unbiased estimate (given the neighbourhood) of how many training
records of class ``c`` the neighbourhood holds, with its standard error; the prediction
is ``argmax_c ŝ_ic`` (the first class on a tie).

The variances come from one fact about the frequency oracles (Wang, Blocki, Li and Jha,
"Locally Differentially Private Protocols for Frequency Estimation", USENIX Security
2017): each report's contribution to a sum of counters is a Bernoulli draw whose rate
depends only on whether the report's true value lies in the summed set ``A``. Over ``n``
reports of which ``m`` have their value in ``A`` (``|A|`` values summed), the debiased sum
``(S_A − n·|A|·q)/(p − q)`` is unbiased for ``m`` with variance

* unary encoding (bits independent): ``[m p(1−p) + (n|A| − m) q(1−q)]/(p − q)²``;
* GRR (one value per report), ``P_in = p + (|A|−1)q``, ``P_out = |A|q``:
  ``[m P_in(1−P_in) + (n − m) P_out(1−P_out)]/(p − q)²``.

The released standard errors plug the estimate ``m̂`` (clipped to ``[0, n]``) in for ``m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import FloatArray

Oracle = Literal["grr", "oue", "exact"]


@dataclass(frozen=True)
class ClassScores:
    """Per query point (rows) and class (columns): score and standard error."""

    scores: FloatArray
    stderr: FloatArray

    @property
    def predicted(self) -> NDArray[np.int64]:
        """``argmax_c ŝ_ic`` (the first class on a tie)."""
        out: NDArray[np.int64] = np.argmax(self.scores, axis=1).astype(np.int64)
        return out


def set_sum_variance(
    oracle: Oracle, m: FloatArray, n: float | FloatArray, size: int | FloatArray, p: float, q: float
) -> FloatArray:
    """Variance of a debiased sum of ``size`` counters over ``n`` reports, ``m`` of them
    with their value in the set (plugged in, clipped to ``[0, n]``); 0 for ``exact``."""
    n_arr = np.asarray(n, dtype=np.float64)
    mc = np.clip(np.asarray(m, dtype=np.float64), 0.0, n_arr)
    a = np.asarray(size, dtype=np.float64)
    if oracle == "exact":
        return np.zeros(np.broadcast(mc, a).shape)
    if oracle == "oue":
        raw = mc * p * (1.0 - p) + (n_arr * a - mc) * q * (1.0 - q)
    else:
        p_in = p + (a - 1.0) * q
        p_out = a * q
        raw = mc * p_in * (1.0 - p_in) + (n_arr - mc) * p_out * (1.0 - p_out)
    out: FloatArray = raw / (p - q) ** 2
    return out


def choose_oracle(domain: int, epsilon: float) -> Oracle:
    """GRR when ``d < 3e^ε + 2`` (its variance is then the smaller), else OUE (Wang et al.
    2017, §5)."""
    return "grr" if domain < 3.0 * np.exp(epsilon) + 2.0 else "oue"


def check_budget(epsilon: float) -> None:
    """:class:`ConfigurationError` unless ``epsilon`` is a finite number > 0."""
    if not (epsilon > 0.0 and math.isfinite(epsilon)):
        raise ConfigurationError(f"ε must be a finite number > 0, got {epsilon!r}")


def check_labels(labels: Any, rows: int, classes: int) -> NDArray[np.int64]:
    """One class index per record, else :class:`InvalidRecordError`."""
    y = np.asarray(labels, dtype=np.int64)
    if y.shape != (rows,) or (y < 0).any() or (y >= classes).any():
        raise InvalidRecordError(f"labels must be {rows} class indices 0 … {classes - 1}")
    return y
