"""Piecewise and Hybrid mechanisms with dimension sampling, for a gradient vector
(``"sampled-piecewise"``, ``"sampled-hybrid"``).

Wang, Xiao, Yang, Zhao, Hui, Shin, Shin and Yu, "Collecting and Analyzing
Multidimensional Data with Local Differential Privacy", ICDE 2019, Algorithm 4. A vector
``t ∈ [−1, 1]^d`` (the gradient clipped per coordinate to ``[−bound, bound]`` and divided
by ``bound``) is answered by ``k`` of its coordinates, chosen uniformly without
replacement and independently of ``t``,

    k = max(1, min(d, ⌊ε/2.5⌋)),

each perturbed by the one-dimensional mechanism (Piecewise, or Hybrid) at ``ε/k``. The
paper's answer is ``y_j·d/k`` on the sampled coordinates and 0 elsewhere, so
``E[answer_j] = (k/d)·(d/k)·t_j = t_j``, with (``Var₁`` the 1-D mechanism's variance)

    Var(answer_j | t) = (d/k)·(Var₁(t_j) + t_j²) − t_j².

Here each sampled coordinate is answered on the 1-D lattice
(:mod:`ldp_shared.mechanisms.lattice`, the channels of
:mod:`~ldp_shared.mechanisms.piecewise` and :mod:`~ldp_shared.mechanisms.hybrid` at
``ε/k``): randomized rounding of ``t_j`` to ``K + 1 = 129`` levels, then one of ``G``
cells drawn exactly from 53-bit integer weights. **The report is ``k`` pairs
(coordinate, cell)**, coordinates strictly increasing; nothing else leaves the device,
and no digit of ``t`` travels (Mironov, CCS 2012).

**Privacy.** The sampled coordinates are independent of ``t``; given them, the ``k``
cells are independent answers of a channel whose exact ε is ``ε₁`` (from its integers).
The likelihood ratio of a report under ``t`` and ``t'`` is the product of ``k`` ratios,
each at most ``e^{ε₁}``, so the exact ε is ``k·ε₁`` (``<= ε(1 + 1e-9)``). It is attained:
the domain is the whole cube, so ``t`` and ``t'`` can differ at every coordinate by the
levels and cells that attain ``ε₁``.

**Estimation.** The aggregator keeps int64 ``counts[d, G]`` (one per coordinate and
cell; flattened row-major in one block of length ``d·G``): the sum of a round is exact
and independent of the order reports arrive in. The mean vector is decoded with the
inflation ``a = d/k`` (:func:`~ldp_shared.mechanisms.gradient.coordinate_estimates`):
``t̂_j = (d/k)·Σ_g c_jg v_g/n``, unbiased, with variance
``Σ_i ((d/k)·E[q_{k_i}] − t_ij²)/n²``, estimated per coordinate by the plug-in.

Segment: ``pairs``, ``3k`` bytes: per pair the coordinate as a 2-byte big-endian
unsigned integer and the cell as 1 byte (``G <= 256``). A report with a coordinate
``>= d``, a cell ``>= G`` or coordinates not strictly increasing is rejected.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms._checks import MAX_EPSILON, check_epsilon
from ldp_shared.mechanisms.base import Segment, Unpacked
from ldp_shared.mechanisms.gradient import (
    GradientNorm,
    LatticeGradient,
    check_parameters,
    check_vectors,
    expected_square,
    refuse_delta,
    register_gradient,
)
from ldp_shared.mechanisms.hybrid import build_hybrid
from ldp_shared.mechanisms.lattice import LatticeChannel, round_to_levels
from ldp_shared.mechanisms.piecewise import LARGEST_EPSILON, build_piecewise
from ldp_shared.rand import resolve_rng

EPSILON_PER_SAMPLE = 2.5
"""Wang et al.'s ``k = ⌊ε/2.5⌋`` (at least 1, at most ``d``)."""
CHUNK = 1 << 22
"""Random keys drawn at once when sampling ``k > 1`` coordinates (bounds memory)."""


def sample_count(dimension: int, epsilon: float) -> int:
    """``k = max(1, min(d, ⌊ε/2.5⌋))``."""
    return max(1, min(dimension, int(epsilon // EPSILON_PER_SAMPLE)))


def sample_coordinates(
    n: int, dimension: int, k: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """``n × k`` coordinates, each row ``k`` distinct ones uniformly at random, increasing."""
    if k == dimension:
        return np.tile(np.arange(dimension, dtype=np.int64), (n, 1))
    if k == 1:
        return rng.integers(0, dimension, size=(n, 1), dtype=np.int64)
    out = np.empty((n, k), dtype=np.int64)
    rows = max(1, CHUNK // dimension)
    for start in range(0, n, rows):
        keys = rng.random((min(rows, n - start), dimension))
        chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
        out[start : start + rows] = np.sort(chosen, axis=1)
    return out


@dataclass(frozen=True)
class SampledGradient(LatticeGradient):
    """``k`` of ``d`` coordinates, each answered by a 1-D lattice mechanism at ``ε/k``."""

    norm: ClassVar[GradientNorm] = "linf"

    dimension: int
    epsilon: float
    bound: float = 1.0
    samples: int | None = None
    """``k``; ``None`` for Wang et al.'s ``max(1, min(d, ⌊ε/2.5⌋))``."""
    k: int = field(init=False, repr=False, compare=False)
    channel: LatticeChannel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = check_parameters(self.dimension, self.epsilon, self.bound, self.name, math.inf)
        d = int(self.dimension)
        k = sample_count(d, eps) if self.samples is None else self.samples
        if isinstance(k, bool) or int(k) != k or not 1 <= k <= d:
            raise ConfigurationError(f"samples must be 1 … {d}, got {k!r}")
        # ε/k is at most ε/d once k = d, below 5 before: the job's ε is limited by d·ε₁'s
        most = min(MAX_EPSILON, (d if self.samples is None else int(k)) * LARGEST_EPSILON)
        what = f"{self.name} on {d} coordinates"
        check_epsilon(eps, most, what)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "dimension", d)
        object.__setattr__(self, "k", int(k))
        try:
            channel = self.build(eps / k)
        except ConfigurationError as error:  # said of ε/k: say it of the ε asked for
            each = "" if k == 1 else f" (it answers k = {k} coordinates at ε/k = {eps / k:.4g})"
            raise ConfigurationError(
                f"{what} cannot run at ε = {eps:g}{each}: {error.detail}"
            ) from None
        if channel.cells > 256:
            raise ConfigurationError("a sampled coordinate's cell travels in one byte")
        object.__setattr__(self, "channel", channel)

    @staticmethod
    @abstractmethod
    def build(epsilon: float) -> LatticeChannel:
        """The 1-D lattice channel at the per-coordinate ``epsilon``."""

    @classmethod
    def create(
        cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
    ) -> SampledGradient:
        refuse_delta(cls.name, delta)
        return cls(dimension=dimension, epsilon=epsilon, bound=bound)

    @property
    def inflation(self) -> float:
        """``d/k``."""
        return self.dimension / self.k

    @property
    def exact_epsilon(self) -> float:
        """``k·ε₁``, ``ε₁`` the exact ε of the integer channel each pair is drawn from."""
        return self.k * self.channel.epsilon

    @property
    def segment(self) -> Segment:
        return Segment("pairs", 3 * self.k)

    def published_parameters(self) -> dict[str, Any]:
        return {"samples": self.k, "levels": self.channel.levels}

    def scaled(self, values: Any) -> FloatArray:
        """``t = g/bound`` of clipped vectors (a coordinate outside the bound is refused)."""
        t = check_vectors(values, self.dimension) / self.bound
        if t.size and float(np.abs(t).max()) > 1.0:
            raise InvalidRecordError(f"coordinates must lie in [-{self.bound}, {self.bound}]")
        return t

    def perturb(self, values: Any, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
        """``n × k × 2`` (coordinate, cell) pairs for clipped vectors (vectorised)."""
        t = self.scaled(values)
        gen = resolve_rng(rng)
        n = t.shape[0]
        coords = sample_coordinates(n, self.dimension, self.k, gen)
        picked = np.take_along_axis(t, coords, axis=1).reshape(-1)
        levels = round_to_levels(picked, self.channel.levels, gen)
        cells = self.channel.integer.sample(levels, gen).reshape(n, self.k)
        return np.stack([coords, cells], axis=-1)

    def pack(self, answers: NDArray[Any]) -> NDArray[np.uint8]:
        pairs = np.asarray(answers, dtype=np.int64).reshape(-1, self.k, 2)
        out = np.empty((pairs.shape[0], self.k, 3), dtype=np.uint8)
        out[..., 0] = pairs[..., 0] >> 8
        out[..., 1] = pairs[..., 0] & 0xFF
        out[..., 2] = pairs[..., 1]
        return out.reshape(-1, 3 * self.k)

    def unpack(self, segment: NDArray[np.uint8]) -> Unpacked:
        raw = np.asarray(segment, dtype=np.int64).reshape(-1, self.k, 3)
        coords = (raw[..., 0] << 8) | raw[..., 1]
        cells = raw[..., 2]
        bad = (coords >= self.dimension).any(axis=1) | (cells >= self.channel.cells).any(axis=1)
        bad |= (np.diff(coords, axis=1) <= 0).any(axis=1)
        return Unpacked(
            values=np.stack([coords, cells], axis=-1),
            bad=np.asarray(bad),
            problem="coordinates must be distinct, increasing and below d; cells below G",
        )

    def accumulate(self, answers: NDArray[Any]) -> dict[str, NDArray[Any]]:
        pairs = np.asarray(answers, dtype=np.int64).reshape(-1, 2)
        return self.count(pairs[:, 0], pairs[:, 1])

    def coordinate_variance(self, gradients: Any) -> FloatArray:
        """``((d/k)·E[q_k | t_j] − t_j²)·bound²`` for each coordinate of each vector."""
        t = self.scaled(gradients)
        square = expected_square(self.channel, t.reshape(-1)).reshape(t.shape)
        out: FloatArray = (self.inflation * square - np.square(t)) * self.bound**2
        return out


@register_gradient
@dataclass(frozen=True)
class SampledPiecewise(SampledGradient):
    """Dimension sampling with the lattice Piecewise mechanism at ``ε/k``."""

    name: ClassVar[str] = "sampled-piecewise"

    @staticmethod
    def build(epsilon: float) -> LatticeChannel:
        return build_piecewise(epsilon)


@register_gradient
@dataclass(frozen=True)
class SampledHybrid(SampledGradient):
    """Dimension sampling with the lattice Hybrid mechanism at ``ε/k``."""

    name: ClassVar[str] = "sampled-hybrid"

    @staticmethod
    def build(epsilon: float) -> LatticeChannel:
        return build_hybrid(epsilon)
