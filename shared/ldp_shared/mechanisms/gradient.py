"""Gradient mechanisms: local randomizers for one vector per device (a clipped gradient).

A gradient mechanism perturbs a whole vector ``g ∈ R^d`` in one answer, under one ε for
the vector. It is a :class:`~ldp_shared.mechanisms.base.Randomizer` (exact ε and δ, a
segment, ``perturb``/``pack``/``unpack``, int64 statistics blocks, ``accumulate``,
``estimate_stats`` with one estimate and standard error per coordinate), so whatever
stores reports and statistics for attributes stores these too. What it adds is the
vector's geometry, which an attribute spec has no place for:

* ``norm`` and ``bound``: the ball the mechanism's domain is (``"linf"``: every
  coordinate in ``[−bound, bound]``; ``"l1"``: ``Σ|g_j| <= bound``; ``"l2"`` for a
  Gaussian mechanism), and :meth:`GradientRandomizer.clip`, which maps any finite vector
  into it on the device, so the sensitivity the privacy proof assumes holds;
* :meth:`GradientRandomizer.coordinate_variance`: the exact variance per report and
  coordinate given the clipped vector (rounding included), for tests and for choosing
  a round size.

Gradient mechanisms are not attribute specs: a gradient is not a field of a record but
a function of a record and the current weights, so they register by name here
(:func:`register_gradient`) rather than in the attribute registry, and a training job
builds one with :func:`~ldp_shared.mechanisms.gradient_mechanisms.gradient_randomizer`.
See ``docs/mechanisms.md`` (the last section) for the decision.

The statistics of the lattice ones are int64 ``counts[d·G]`` (coordinate, cell), which
:func:`coordinate_estimates` decodes with the 1-D lattice channel's decoders
(:mod:`ldp_shared.mechanisms.lattice`). With ``a`` the inflation (``d/k`` when ``k`` of
``d`` coordinates are sampled, else 1), ``c_jg`` the counts, ``v``/``w`` the mean and
square decoders and ``n`` the reports: ``t̂_j = a Σ_g c_jg v_g/n`` (unbiased),
``Q̂_j = a² Σ_g c_jg v_g²/n`` (unbiased for the mean of ``E[Z²]``, ``Z`` one report's
contribution), ``m̂_j = a Σ_g c_jg w_g/n`` (for the mean of the squared levels) and
``Var t̂_j ≈ (Q̂_j − m̂₂_j)/n`` with ``m̂₂`` as in the lattice module (``m̂ − 1/K²``
clipped to ``[t̂_c², 1]``), floored at the smallest variance one report can have;
everything scales by ``bound``.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import FloatArray, FrequencyEstimate
from ldp_shared.mechanisms._checks import MAX_EPSILON, check_epsilon
from ldp_shared.mechanisms.base import Blocks, Randomizer, StatsBlock
from ldp_shared.mechanisms.lattice import LatticeChannel, level_values

GradientNorm = Literal["linf", "l1", "l2"]
MAX_DIMENSION = 65_535
"""A coordinate index travels in 2 bytes."""


class GradientRandomizer(Randomizer):
    """A local randomizer of one vector in the ``norm`` ball of radius ``bound``."""

    name: ClassVar[str]
    norm: ClassVar[GradientNorm]

    dimension: int
    """``d``: the length of the vectors."""
    bound: float
    """The radius of the ball the vectors are clipped into."""

    @classmethod
    @abstractmethod
    def create(
        cls, dimension: int, epsilon: float, bound: float = 1.0, delta: float | None = None
    ) -> GradientRandomizer:
        """The mechanism at ``epsilon`` (and ``delta`` for an approximate one)."""

    def clip(self, gradients: Any) -> FloatArray:
        """Each row mapped into the ball (a row inside it is unchanged): per coordinate for
        ``linf``, scaled towards zero for ``l1`` and ``l2``."""
        g = check_vectors(gradients, self.dimension)
        if self.norm == "linf":
            out: FloatArray = np.clip(g, -self.bound, self.bound)
            return out
        norms = np.abs(g).sum(axis=1) if self.norm == "l1" else np.sqrt(np.square(g).sum(axis=1))
        factor = np.minimum(1.0, self.bound / np.maximum(norms, np.finfo(np.float64).tiny))
        scaled: FloatArray = g * factor[:, None]
        return scaled

    @abstractmethod
    def coordinate_variance(self, gradients: Any) -> FloatArray:
        """The variance of each coordinate of one report's decoded vector (``n × d``),
        given the clipped vectors, rounding to the lattice included."""

    def estimate_stats(self, stats: Blocks, n: int, confidence: float) -> FrequencyEstimate:
        """The mean vector of the ``n`` reporters' clipped vectors, per coordinate with its
        standard error and interval."""
        mean, variance = self.estimate_mean(stats, n)
        return FrequencyEstimate.normal(n, mean, np.sqrt(variance), confidence)

    @abstractmethod
    def estimate_mean(self, stats: Blocks, n: int) -> tuple[FloatArray, FloatArray]:
        """The unbiased mean vector and the estimated variance of each coordinate."""


class LatticeGradient(GradientRandomizer):
    """A gradient mechanism that answers coordinates on one 1-D lattice channel: its
    statistics are int64 ``counts[d, G]`` (coordinate, cell), decoded by
    :func:`coordinate_estimates` with the subclass's ``inflation``."""

    channel: LatticeChannel

    @property
    def inflation(self) -> float:
        """``a``: how much one answered coordinate counts for (``d/k`` when sampled)."""
        return 1.0

    @property
    def stats_layout(self) -> tuple[StatsBlock, ...]:
        return (StatsBlock("counts", "int64", self.dimension * self.channel.cells),)

    def published(self) -> dict[str, Any]:
        base = {"dimension": self.dimension, "bound": self.bound, "cells": self.channel.cells}
        return {**base, **self.published_parameters()}

    def published_parameters(self) -> dict[str, Any]:
        """What a client needs, besides ``d``, the bound and ``G``, to rebuild the channel."""
        return {}

    def count(self, coordinates: NDArray[np.int64], cells: NDArray[np.int64]) -> dict[str, Any]:
        """The ``counts`` delta of answered (coordinate, cell) pairs."""
        flat = (coordinates * self.channel.cells + cells).reshape(-1)
        counts = np.bincount(flat, minlength=self.dimension * self.channel.cells)
        return {"counts": counts.astype(np.int64)}

    def estimate_mean(self, stats: Blocks, n: int) -> tuple[FloatArray, FloatArray]:
        counts = np.asarray(stats["counts"]).reshape(self.dimension, self.channel.cells)
        t_hat, var_t = coordinate_estimates(counts, n, self.channel, self.inflation)
        mean: FloatArray = t_hat * self.bound
        variance: FloatArray = var_t * self.bound**2
        return mean, variance


def check_vectors(values: Any, dimension: int) -> FloatArray:
    """``values`` as a finite ``n × dimension`` float array, else :class:`InvalidRecordError`."""
    g = np.asarray(values, dtype=np.float64)
    if g.ndim != 2 or g.shape[1] != dimension:
        raise InvalidRecordError(
            f"gradients must be an n × {dimension} array, got shape {np.shape(values)}"
        )
    if not np.isfinite(g).all():
        raise InvalidRecordError("gradients must be finite numbers (NaN or inf found)")
    return g


def check_parameters(
    dimension: int,
    epsilon: float,
    bound: float,
    mechanism: str = "a gradient mechanism",
    most: float = MAX_EPSILON,
    least: float = 0.0,
) -> float:
    """Refuse a bad ``d``, ε (outside ``(least, most]``: the one rule of ``_checks.py``) or
    bound (:class:`ConfigurationError`); ε as a float."""
    if isinstance(dimension, bool) or int(dimension) != dimension or dimension < 1:
        raise ConfigurationError(f"a gradient needs a dimension >= 1, got {dimension!r}")
    if dimension > MAX_DIMENSION:
        raise ConfigurationError(f"a gradient has at most {MAX_DIMENSION} coordinates")
    eps = check_epsilon(epsilon, most, mechanism, least)
    if math.isinf(eps):
        raise ConfigurationError("a gradient mechanism needs a finite ε")
    if not (math.isfinite(bound) and bound > 0.0):
        raise ConfigurationError(f"the clipping bound must be a positive number, got {bound!r}")
    return eps


def coordinate_estimates(
    counts: NDArray[np.int64], n: int, channel: LatticeChannel, inflation: float
) -> tuple[FloatArray, FloatArray]:
    """``t̂_j`` and the plug-in ``Var t̂_j`` (``t`` scale) from ``counts[d, G]`` (see the
    module docstring)."""
    if n <= 0:
        raise InvalidQueryError("no reports to estimate from")
    pi = np.asarray(counts, dtype=np.float64) / n
    v = channel.mean_decoder
    t_hat = inflation * (pi @ v)
    q_hat = inflation * inflation * (pi @ np.square(v))
    tc2 = np.square(np.clip(t_hat, -1.0, 1.0))
    if channel.square_decoder is None:
        m2 = tc2
    else:
        m_hat = inflation * (pi @ channel.square_decoder)
        m2 = np.clip(m_hat - 1.0 / channel.levels**2, tc2, 1.0)
    levels = level_values(channel.levels)
    floor = float(np.min(inflation * channel.second_moments - np.square(levels)))
    variance: FloatArray = np.maximum(q_hat - m2, floor) / n
    return t_hat, variance


def expected_square(channel: LatticeChannel, t: FloatArray) -> FloatArray:
    """``E[v_y² | t] = E[q_k | t]``: the decoder's second moment at true values ``t``
    (randomized rounding to the levels included)."""
    out: FloatArray = channel.report_variance(t) + np.square(t)
    return out


GRADIENTS: dict[str, type[GradientRandomizer]] = {}
"""The gradient mechanisms by name, filled by :func:`register_gradient`; read through
:mod:`ldp_shared.mechanisms.gradient_mechanisms`, which imports the built-in ones."""

GradientClass = TypeVar("GradientClass", bound=type[GradientRandomizer])


def register_gradient(cls: GradientClass) -> GradientClass:
    """File a gradient mechanism under its ``name`` (a decorator)."""
    known = GRADIENTS.get(cls.name)
    if known is not None and known is not cls:
        raise ConfigurationError(f"gradient mechanism {cls.name!r} is registered already")
    GRADIENTS[cls.name] = cls
    return cls


def refuse_delta(name: str, delta: float | None) -> None:
    """A pure ε mechanism takes no δ (``None`` or 0)."""
    if delta not in (None, 0.0):
        raise ConfigurationError(f"{name} is pure ε-LDP: it takes no δ, got {delta!r}")
