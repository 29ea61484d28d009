"""What a mechanism tells a likelihood-based estimator: its channel and what it observed.

A mechanism whose answers come from a finite channel ``M[y, x] = P(output y | value x)``
summarises ``n`` answers by the counts ``C_y`` of each output, and the log-likelihood of
a distribution ``f`` of the values is ``Σ_y C_y ln (M f)_y``. The iterative Bayesian
update (:mod:`ldp_shared.analyses.ibu`) maximises it on the simplex using only two
products, ``M f`` and ``Mᵀ r``; :class:`ReportChannel` exposes exactly those, so that a
structured channel costs O(d) per iteration instead of a dense O(d²):

* :class:`DenseChannel`: any column-stochastic matrix (the exponential mechanism);
* :class:`RandomizedResponseChannel`: ``p`` on the diagonal, ``q`` elsewhere (GRR):
  ``M f = q·Σf + (p − q) f`` and ``Mᵀ r = q·Σr + (p − q) r``;
* :class:`UnaryBitChannel`: unary encoding. Its ``d`` bits are reported together, and
  their per-bit counts ``S_v`` are not sufficient for the likelihood of whole bit
  vectors (that needs every report's vector). They are sufficient for the *composite*
  likelihood that treats the bits as independent, ``Σ_v S_v ln(q + (p − q) f_v) +
  (n − S_v) ln(1 − q − (p − q) f_v)`` (Lindsay, "Composite likelihood methods", 1988):
  a concave function of ``f`` whose expectation is maximised at the true ``f``, so its
  maximiser on the simplex is consistent. It is the likelihood of the channel "report
  bit ``v``, chosen uniformly, and its value" over ``2d`` outputs, ``M[(v, b), x] =
  P(bit v = b | x)/d``, with counts ``S_v`` and ``n − S_v``; so the same update applies.
  (multi-freq-ldpy's ``UE_Aggregator_IBU`` keeps only the ones, ``Σ_v S_v ln(q + (p −
  q) f_v)``, dropping what the zeros say.)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray


def _counts(counts: ArrayLike, outputs: int) -> FloatArray:
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != (outputs,) or not np.all(np.isfinite(c)) or np.any(c < 0.0):
        raise InvalidQueryError(f"counts must be {outputs} finite non-negative numbers")
    if float(c.sum()) <= 0.0:
        raise InvalidQueryError("no reports to estimate from")
    return c


class ReportChannel(ABC):
    """A channel over ``cells`` values and the counts of its outputs."""

    cells: int
    counts: FloatArray
    """``C_y``, one per output (non-negative, not all zero)."""

    @abstractmethod
    def forward(self, f: FloatArray) -> FloatArray:
        """``M f``: the output distribution when the values follow ``f``."""

    @abstractmethod
    def backward(self, r: FloatArray) -> FloatArray:
        """``Mᵀ r``, one entry per value."""


@dataclass(frozen=True)
class DenseChannel(ReportChannel):
    """An explicit column-stochastic matrix ``M[y, x]`` (every column sums to 1)."""

    matrix: FloatArray
    counts: FloatArray

    def __post_init__(self) -> None:
        m = np.asarray(self.matrix, dtype=np.float64)
        if m.ndim != 2 or 0 in m.shape:
            raise InvalidQueryError("the channel must be a non-empty matrix M[report, value]")
        if not np.all(np.isfinite(m)) or np.any(m < 0.0):
            raise InvalidQueryError("channel probabilities must be finite and non-negative")
        if not np.allclose(m.sum(axis=0), 1.0, rtol=0.0, atol=1e-9):
            raise InvalidQueryError("each channel column (one value's reports) must sum to 1")
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "counts", _counts(self.counts, m.shape[0]))

    @property
    def cells(self) -> int:  # type: ignore[override]
        return int(self.matrix.shape[1])

    def forward(self, f: FloatArray) -> FloatArray:
        out: FloatArray = self.matrix @ f
        return out

    def backward(self, r: FloatArray) -> FloatArray:
        out: FloatArray = self.matrix.T @ r
        return out


@dataclass(frozen=True)
class RandomizedResponseChannel(ReportChannel):
    """``d`` outputs, the true value with probability ``p``, each other with ``q``."""

    cells: int
    p: float
    q: float
    counts: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _counts(self.counts, self.cells))

    def forward(self, f: FloatArray) -> FloatArray:
        out: FloatArray = self.q * f.sum() + (self.p - self.q) * f
        return out

    def backward(self, r: FloatArray) -> FloatArray:
        return self.forward(r)  # the matrix is symmetric


@dataclass(frozen=True)
class UnaryBitChannel(ReportChannel):
    """Unary encoding's per-bit channel over ``2d`` outputs (bit ``v`` is 1, then 0)."""

    cells: int
    p: float
    q: float
    counts: FloatArray

    @classmethod
    def of(cls, cells: int, p: float, q: float, ones: ArrayLike, n: int) -> UnaryBitChannel:
        """From the per-bit counts of ones ``S_v`` of ``n`` reports."""
        s = np.asarray(ones, dtype=np.float64)
        return cls(cells, p, q, np.concatenate([s, n - s]))

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _counts(self.counts, 2 * self.cells))

    def forward(self, f: FloatArray) -> FloatArray:
        one = self.q + (self.p - self.q) * f
        out: FloatArray = np.concatenate([one, 1.0 - one]) / self.cells
        return out

    def backward(self, r: FloatArray) -> FloatArray:
        ones, zeros = r[: self.cells], r[self.cells :]
        common = self.q * ones.sum() + (1.0 - self.q) * zeros.sum()
        out: FloatArray = (common + (self.p - self.q) * (ones - zeros)) / self.cells
        return out
