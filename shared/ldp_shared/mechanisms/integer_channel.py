"""Finite channels quantised to integers and sampled exactly (shared by every mechanism
whose answer is one of finitely many outputs drawn from a precomputed channel).

A channel ``M[y, x] = P(output y | input x)`` is turned into int64 weights ``W[y, x] >= 1``
whose columns sum to exactly ``2^53`` (:func:`quantise`: largest remainder). A device
draws ``U``, the top 53 bits of one raw 64-bit word of its generator (uniform on
``[0, 2^53)``), and answers the first ``y`` whose cumulative weight in column ``x``
exceeds ``U``: ``P(y | x) = W[y, x]/2^53`` exactly, with no floating-point comparison in
the draw. The division by ``2^53`` is exact in IEEE doubles, so
``channel_epsilon(W/2^53)`` is the ε of what is sent. A quantised channel whose ε exceeds
the allotted ε by more than the relative :data:`EPSILON_SLACK` is refused
(:func:`integer_channel`): a weight of ``w`` moves a log-ratio by up to about ``1/w``, so a
channel with tight ratios (``e^ε`` exactly) needs its smallest weights well above
``1/(ε·EPSILON_SLACK)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FloatArray, channel_epsilon
from ldp_shared.mechanisms.base import EPSILON_SLACK

TOTAL_BITS = 53
TOTAL = 1 << TOTAL_BITS
"""Every channel column's integer weights sum to ``2^53``."""


def quantise(probabilities: FloatArray) -> NDArray[np.int64]:
    """Integer weights ``>= 1`` per column summing to exactly ``2^53`` (largest remainder)."""
    scaled = np.asarray(probabilities, dtype=np.float64) * float(TOTAL)  # exact scaling
    weights = np.maximum(np.floor(scaled), 1.0).astype(np.int64)
    remainder = scaled - weights
    rows = np.broadcast_to(np.arange(weights.shape[0])[:, None], weights.shape)
    while np.any(short := TOTAL - weights.sum(axis=0)):
        step = np.sign(short)[None, :]
        # short > 0: raise the largest remainders; short < 0: lower the smallest (not at 1)
        key = np.where(step > 0, -remainder, np.where(weights > 1, remainder, np.inf))
        rank = np.empty_like(rows)
        np.put_along_axis(rank, np.argsort(key, axis=0, kind="stable"), rows, axis=0)
        eligible = np.where(short > 0, weights.shape[0], (weights > 1).sum(axis=0))
        change = step * (rank < np.minimum(np.abs(short), eligible)[None, :])
        weights += change
        remainder -= change
    return weights


def uniform_words(size: int, rng: np.random.Generator) -> NDArray[np.uint64]:
    """``size`` uniform integers on ``[0, 2^53)``: the top bits of raw 64-bit words."""
    draws = np.asarray(rng.bit_generator.random_raw(size), dtype=np.uint64)
    draws >>= np.uint64(64 - TOTAL_BITS)
    return draws


@dataclass(frozen=True)
class IntegerChannel:
    """A quantised channel: weights ``W[y, x]`` (columns sum to ``2^53``), their cumulative
    sums per column, and the exact ε of ``W/2^53``."""

    weights: NDArray[np.int64]
    cumulative: NDArray[np.uint64]
    epsilon: float

    @property
    def matrix(self) -> FloatArray:
        """``M[y, x] = W[y, x]/2^53``, exactly the probabilities the device samples."""
        return self.weights / float(TOTAL)

    @property
    def outputs(self) -> int:
        return int(self.weights.shape[0])

    def sample(self, columns: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
        """One output per input column index: the first row whose cumulative weight in that
        column exceeds a uniform 53-bit integer (inputs grouped by column, vectorised)."""
        idx = np.asarray(columns, dtype=np.int64)
        draws = uniform_words(idx.size, rng)
        out = np.empty(idx.size, dtype=np.int64)
        order = np.argsort(idx, kind="stable")
        bounds = np.searchsorted(idx[order], np.arange(self.weights.shape[1] + 1))
        for x in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[x] : bounds[x + 1]]
            out[rows] = np.searchsorted(self.cumulative[:, x], draws[rows], side="right")
        return out


def integer_channel(probabilities: FloatArray, epsilon: float) -> IntegerChannel:
    """The quantised channel of ``probabilities`` (columns summing to about one), refused
    when it spends more than ``epsilon·(1 + EPSILON_SLACK)``."""
    weights = quantise(probabilities)
    exact = channel_epsilon(weights / float(TOTAL))
    if exact > epsilon * (1.0 + EPSILON_SLACK):
        small = epsilon < 1.0  # probabilities too close together, else too close to 0
        raise ConfigurationError(
            f"ε = {epsilon!r} needs report probabilities"
            f" {'closer together' if small else 'smaller'} than 53-bit weights represent"
            f" (the quantised channel spends {exact!r}); use a {'larger' if small else 'smaller'} ε"
        )
    cumulative = np.cumsum(weights, axis=0).astype(np.uint64)
    for array in (weights, cumulative):
        array.setflags(write=False)
    return IntegerChannel(weights, cumulative, exact)
