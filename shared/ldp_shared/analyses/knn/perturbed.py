"""Candidate (a): per-coordinate perturbation, neighbours found in the perturbed space.

Each device sends ONE report of two parts, both from the scaled record
``t ∈ [−1, 1]^m`` (:mod:`ldp_shared.knn_space`) and its class ``c``:

* the features by the Piecewise (or Hybrid) mechanism with dimension sampling, at
  ``ε_x = (1 − label_share)·ε`` (:mod:`ldp_shared.mechanisms.gradient_sampling`: Wang,
  Xiao, Yang, Zhao, Hui, Shin, Shin and Yu, ICDE 2019, Algorithm 4; ``s`` of the ``m``
  coordinates, each on the lattice at ``ε_x/s``);
* the class by GRR over ``k`` classes at ``ε_c = label_share·ε``.

**Exact ε** = the sampled mechanism's exact ``s·ε₁`` plus GRR's ``ln(p/q)`` (sequential
composition of two independent answers).

**Aggregator.** Report ``i`` is decoded to ``v_i ∈ R^m``: ``(m/s)·v[y_ij]`` on each
sampled coordinate (the lattice's unbiased mean decoder), 0 elsewhere, so
``E[v_i] = t_i``; and ``w_i = Σ_j (m/s)·w[y_ij]`` with the square decoder ``w``, so
``E[w_i] = ‖t_i‖²`` (up to the rounding's ``≤ m/K²``). Then

    D̂(u, i) = w_i − 2 v_i·u + ‖u‖²

is an unbiased estimate of the squared distance ``‖t_i − u‖²``. The ``K`` reports of
least ``D̂`` are the query's neighbours. Their selection depends on the feature answers
only, which are independent of the class answers, so given the neighbours the
``C_c`` of them reporting class ``c`` debias by GRR to ``ŝ_c = (C_c − Kq)/(p − q)``,
unbiased for how many of the selected reporters have class ``c``, with the variance of
:func:`.scores.set_sum_variance` (a set of one class).

Memory: ``n × (m + 1)`` float32 and ``n`` class indices; a query costs ``O(n·m)``.

``noiseless=True`` (tests only) keeps every coordinate and the class exact: the
classifier is then scikit-learn's ``KNeighborsClassifier`` on ``t`` (ties aside).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.analyses.knn.scores import (
    ClassScores,
    Oracle,
    check_budget,
    check_labels,
    set_sum_variance,
)
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms.gradient_sampling import SampledGradient, SampledHybrid, SampledPiecewise
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.rand import resolve_rng

QUERY_BLOCK = 1 << 24
"""Distances computed at once (float32): bounds the query's working memory to 64 MiB."""


@dataclass(frozen=True)
class CoordinateProtocol:
    """Sampled PM/HM features at ``(1 − label_share)·ε`` and a GRR class at the rest."""

    dimension: int
    classes: int
    epsilon: float
    label_share: float = 0.5
    mechanism: str = "piecewise"
    noiseless: bool = False
    """Test only: every coordinate and the class unperturbed."""
    features: SampledGradient = field(init=False, repr=False, compare=False)
    label: GeneralizedRandomizedResponse = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.label_share < 1.0:
            raise ConfigurationError(f"label_share must lie in (0, 1), got {self.label_share!r}")
        check_budget(self.epsilon)
        kind = {"piecewise": SampledPiecewise, "hybrid": SampledHybrid}.get(self.mechanism)
        if kind is None:
            raise ConfigurationError("mechanism must be 'piecewise' or 'hybrid'")
        features = kind(dimension=self.dimension, epsilon=(1 - self.label_share) * self.epsilon)
        if features.channel.square_decoder is None:
            raise ConfigurationError("the feature channel carries no second moment at this ε")
        label = GeneralizedRandomizedResponse(
            d=self.classes, epsilon=self.label_share * self.epsilon
        )
        object.__setattr__(self, "features", features)
        object.__setattr__(self, "label", label)

    @property
    def p(self) -> float:
        return 1.0 if self.noiseless else self.label.p

    @property
    def q(self) -> float:
        return 0.0 if self.noiseless else self.label.q

    @property
    def exact_epsilon(self) -> float:
        """``s·ε₁ + ln(p/q)`` (``inf`` when noiseless)."""
        if self.noiseless:
            return math.inf
        return self.features.exact_epsilon + self.label.exact_epsilon

    def report(
        self, t: FloatArray, labels: Any, rng: np.random.Generator | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each device's ``s`` (coordinate, cell) pairs and its reported class."""
        y = check_labels(labels, t.shape[0], self.classes)
        gen = resolve_rng(rng)
        if self.noiseless:
            return np.empty((t.shape[0], 0, 2), dtype=np.int64), y
        return self.features.perturb(t, gen), self.label.perturb(y, gen)

    def decode(
        self, pairs: NDArray[np.int64], labels: NDArray[np.int64], t: FloatArray | None = None
    ) -> StoredReports:
        """The aggregator's per-report ``v_i``, ``w_i`` and class (``t`` when noiseless)."""
        if self.noiseless:
            assert t is not None
            return StoredReports(
                vectors=t.astype(np.float32),
                squares=np.square(t).sum(axis=1).astype(np.float32),
                labels=np.asarray(labels, dtype=np.int64),
            )
        channel = self.features.channel
        assert channel.square_decoder is not None
        inflation = self.features.inflation
        n = pairs.shape[0]
        vectors = np.zeros((n, self.dimension), dtype=np.float32)
        rows = np.repeat(np.arange(n), pairs.shape[1])
        coords, cells = pairs[..., 0].reshape(-1), pairs[..., 1].reshape(-1)
        vectors[rows, coords] = inflation * channel.mean_decoder[cells]
        squares = inflation * channel.square_decoder[cells].reshape(n, -1).sum(axis=1)
        return StoredReports(vectors, squares.astype(np.float32), np.asarray(labels, np.int64))

    def scores(self, stored: StoredReports, queries: FloatArray, *, k: int) -> ClassScores:
        """Debiased class counts among each query's ``k`` nearest reports by ``D̂``."""
        n = stored.labels.shape[0]
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise InvalidQueryError(f"k must be a positive integer, got {k!r}")
        if n == 0:
            raise InvalidQueryError("no reports to classify from")
        k = min(int(k), n)
        out = np.empty((queries.shape[0], self.classes))
        block = max(1, QUERY_BLOCK // n)
        u32 = queries.astype(np.float32)
        for start in range(0, queries.shape[0], block):
            u = u32[start : start + block]
            dist = stored.squares[None, :] - 2.0 * (u @ stored.vectors.T)
            nearest = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < n else None
            chosen = stored.labels[nearest] if nearest is not None else stored.labels[None, :]
            onehot = chosen[..., None] == np.arange(self.classes)
            out[start : start + block] = onehot.sum(axis=1)
        scores = (out - k * self.q) / (self.p - self.q)
        oracle: Oracle = "exact" if self.noiseless else "grr"
        var = set_sum_variance(oracle, scores, float(k), 1, self.p, self.q)
        return ClassScores(scores=scores, stderr=np.sqrt(var))


@dataclass(frozen=True)
class StoredReports:
    """Decoded reports: ``v`` (``n × m``), ``w`` (``n``), reported classes (``n``)."""

    vectors: NDArray[np.float32]
    squares: NDArray[np.float32]
    labels: NDArray[np.int64]

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.squares.nbytes + self.labels.nbytes)
