"""Candidate (b): joint (cell, class) counts through a frequency oracle (the winner).

A kernel-density classifier over locality-sensitive cells. The standardised feature
space (``z``, :mod:`ldp_shared.knn_space`) is cut by ``T`` public tables of ``b`` random
hyperplanes each (Charikar, "Similarity Estimation Techniques from Rounding Algorithms", STOC 2002:
sign random projections; here every hyperplane passes through a point drawn from the
standard normal of ``R^m``, so the cells are bounded regions where the standardised data
lie, and not cones through the origin). Hyperplane ``i`` of table ``τ`` has a standard normal normal
``a_τi`` and threshold ``a_τi·z_τi``; the cell of ``t`` in table ``τ`` is the ``b``-bit
code ``h_τ(t) = Σ_i 2^i·[a_τi·t ≥ a_τi·z_τi]``. Nearby points share most bits, so the
Hamming distance between codes stands in for the distance between points. (Below, ``t``
in a signature means the standardised points ``z``.)

**Device.** One report: a table ``τ`` chosen uniformly (independently of the record,
as in the dimension sampling of Wang et al., ICDE 2019) and the joint value
``h_τ(t)·k + c`` of the cell and the class ``c`` over the domain ``d = 2^b·k``, through
one frequency oracle at the whole ε, as the naive-Bayes collections report
``(value, class)`` (Yilmaz, Al-Rubaie and Chang, arXiv:1905.01039, 2019). The oracle is
GRR when ``d < 3e^ε + 2`` and OUE otherwise (Wang, Blocki, Li and Jha, USENIX Security
2017). **Exact ε** is the oracle's (``ln(p/q)`` for GRR, ``ln(p(1−q)/((1−p)q))`` for
OUE): the table is independent of the record, so it costs nothing.

**Aggregator.** Per table, the ``d`` counters ``S_τ`` and the report count ``n_τ``.
``N̂_τ(h, c) = (S_τ[h·k + c] − n_τ q)/(p − q)`` is unbiased for the number of the
table's reporters in cell ``h`` with class ``c``.

**Query.** For query ``u`` and table ``τ``, the ball ``B_r`` of the cells within
Hamming distance ``r`` of ``h_τ(u)``; ``r_τ`` is the smallest radius whose estimated
population, scaled to all ``n`` reports, ``(n/n_τ)·Σ_c Σ_{h∈B_r} N̂_τ(h, c)``, reaches
``k`` (the kNN analogue: the smallest neighbourhood with ``k`` points) and whose
estimated population ``P̂`` is at least :data:`SNR` of its own standard errors (the
bandwidth follows the noise), or a fixed ``radius``. With ``k`` each table's ball is
weighted by ``(n/n_τ)·k/max((n/n_τ)P̂, k)`` instead of ``n/n_τ``, so that every table votes
with about ``k`` points whatever the size of the query's cell. The score is the average
over the tables that have reports,

    ŝ_c(u) = (1/T') Σ_τ ω_τ Σ_{h∈B_{r_τ}} N̂_τ(h, c),      ω_τ = n/n_τ for a fixed radius,

with variance ``(1/T'²) Σ_τ ω_τ² Var_τ`` (:func:`.scores.set_sum_variance`, the
set ``A`` the ball's ``|B_r|`` cells of class ``c``). Given the radii it is unbiased for the
average over tables of ``ω_τ`` times the class-``c`` reporters of the table in the ball;
with a fixed ``radius`` exactly so (tested); with ``k`` the radius and weight are
themselves chosen from the noisy counts (post-processing, so no privacy cost; the
standard error is then conditional on them).
The aggregator's memory is ``T·2^b·k`` counters whatever ``n``, and a query costs
``O(T·2^b·k)``.

``noiseless=True`` (tests only) sends the joint value itself (``p = 1``, ``q = 0``): the
classifier is then exactly the same LSH-ball classifier computed from the true records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ldp_shared.analyses.knn.scores import (
    ClassScores,
    Oracle,
    check_budget,
    check_labels,
    choose_oracle,
    set_sum_variance,
)
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.knn_cells import MAX_BITS, cell_codes, hyperplanes
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.unary import OptimizedUnaryEncoding
from ldp_shared.rand import resolve_rng

QUERY_BLOCK = 1 << 22
"""Query points × joint values gathered at once (bounds a query's working memory)."""
SNR = 2.0
"""With ``k``, a ball must also hold at least ``SNR`` standard errors of its own estimated
population (chosen among 0, 1, 2, 3, 5 on a validation split of adult.data, never on
adult.test): at small ε the balls then widen towards the whole table and the prediction
towards the majority class, instead of following the noise."""


@dataclass(frozen=True)
class CellProtocol:
    """``T`` tables of ``b`` hyperplanes over ``m`` features, ``k`` classes, at ``epsilon``."""

    dimension: int
    classes: int
    epsilon: float
    tables: int = 4
    bits: int = 10
    seed: int = 0
    """Public: draws the hyperplanes (part of the model's configuration)."""
    noiseless: bool = False
    """Test only: report the joint value unperturbed."""
    mechanism: Literal["auto", "grr", "oue"] = "auto"
    """The oracle; ``auto`` for Wang et al.'s rule (a label collection reports by OUE)."""
    normals: FloatArray = field(init=False, repr=False, compare=False)
    thresholds: FloatArray = field(init=False, repr=False, compare=False)
    oracle: Oracle = field(init=False)
    p: float = field(init=False)
    q: float = field(init=False)

    def __post_init__(self) -> None:
        for name, low, high in (("tables", 1, 256), ("bits", 1, MAX_BITS), ("classes", 2, 256)):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or not low <= value <= high:
                raise ConfigurationError(f"{name} must be an integer in {low} … {high}")
        check_budget(self.epsilon)
        normals, thresholds = hyperplanes(self.dimension, self.tables, self.bits, self.seed)
        object.__setattr__(self, "normals", normals)
        object.__setattr__(self, "thresholds", thresholds)
        if self.noiseless:
            oracle: Oracle = "exact"
            p, q = 1.0, 0.0
        else:
            oracle = (
                choose_oracle(self.domain, self.epsilon)
                if self.mechanism == "auto"
                else self.mechanism
            )
            mech = self._mechanism(oracle)
            p, q = mech.p, mech.q
        object.__setattr__(self, "oracle", oracle)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @property
    def cells(self) -> int:
        return 1 << self.bits

    @property
    def domain(self) -> int:
        """``d = 2^b·k`` joint values."""
        return self.cells * self.classes

    def _mechanism(self, oracle: Oracle) -> GeneralizedRandomizedResponse | Any:
        if oracle == "grr":
            return GeneralizedRandomizedResponse(d=self.domain, epsilon=self.epsilon)
        return OptimizedUnaryEncoding(d=self.domain, epsilon=self.epsilon)

    @property
    def exact_epsilon(self) -> float:
        """The oracle's ε computed from its ``p`` and ``q`` (``inf`` when noiseless)."""
        if self.noiseless:
            return math.inf
        return float(self._mechanism(self.oracle).exact_epsilon)

    def codes(self, t: FloatArray) -> NDArray[np.int64]:
        """``n × T`` cell codes of standardised points."""
        return cell_codes(self.normals, self.thresholds, t)

    # ---- device ---------------------------------------------------------------------

    def report(
        self, t: FloatArray, labels: Any, rng: np.random.Generator | None = None
    ) -> tuple[NDArray[np.int64], NDArray[Any]]:
        """Each device's table and perturbed joint value (GRR index / OUE bits)."""
        y = check_labels(labels, t.shape[0], self.classes)
        gen = resolve_rng(rng)
        table: NDArray[np.int64] = np.asarray(
            gen.integers(0, self.tables, size=t.shape[0]), dtype=np.int64
        )
        codes = np.take_along_axis(self.codes(t), table[:, None], axis=1)[:, 0]
        joint: NDArray[np.int64] = codes * self.classes + y
        if self.noiseless:
            return table, joint
        answers: NDArray[Any] = self._mechanism(self.oracle).perturb(joint, gen)
        return table, answers

    # ---- aggregator -----------------------------------------------------------------

    def empty_counts(self) -> CellCounts:
        return CellCounts(
            sums=np.zeros((self.tables, self.domain), dtype=np.int64),
            reports=np.zeros(self.tables, dtype=np.int64),
        )

    def accumulate(
        self, counts: CellCounts, table: NDArray[np.int64], answers: NDArray[Any]
    ) -> None:
        """Add a batch of reports to the per-table counters (in place)."""
        counts.reports += np.bincount(table, minlength=self.tables)
        if self.oracle == "oue":
            for tau in range(self.tables):
                rows = answers[table == tau]
                if rows.size:
                    counts.sums[tau] += rows.sum(axis=0, dtype=np.int64)
        else:
            flat = table * self.domain + np.asarray(answers, dtype=np.int64)
            counts.sums += np.bincount(flat, minlength=self.tables * self.domain).reshape(
                self.tables, self.domain
            )

    def cell_counts(self, counts: CellCounts) -> FloatArray:
        """``N̂_τ(h, c)``: ``T × 2^b × k``."""
        n = counts.reports.astype(np.float64)[:, None]
        est = (counts.sums - n * self.q) / (self.p - self.q)
        out: FloatArray = est.reshape(self.tables, self.cells, self.classes)
        return out

    def scores(
        self,
        counts: CellCounts,
        queries: FloatArray,
        *,
        k: int | None = None,
        radius: int | None = None,
        snr: float = SNR,
    ) -> ClassScores:
        """Debiased class scores of standardised query points (see the module docstring)."""
        if (k is None) == (radius is None):
            raise InvalidQueryError("give exactly one of k and radius")
        if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
            raise InvalidQueryError(f"k must be a positive integer, got {k!r}")
        if radius is not None and not 0 <= radius <= self.bits:
            raise InvalidQueryError(f"radius must be 0 … {self.bits}, got {radius!r}")
        live = np.flatnonzero(counts.reports > 0)
        if live.size == 0:
            raise InvalidQueryError("no reports to classify from")
        block = max(1, QUERY_BLOCK // self.domain)
        if queries.shape[0] > block:
            parts = [
                self.scores(counts, queries[s : s + block], k=k, radius=radius, snr=snr)
                for s in range(0, queries.shape[0], block)
            ]
            return ClassScores(
                scores=np.concatenate([part.scores for part in parts]),
                stderr=np.concatenate([part.stderr for part in parts]),
            )
        n = float(counts.reports.sum())
        est = self.cell_counts(counts)
        codes = self.codes(queries)
        masks, by_level = _masks_by_distance(self.bits)
        sizes = np.cumsum([math.comb(self.bits, r) for r in range(self.bits + 1)])
        total = np.zeros((queries.shape[0], self.classes))
        variance = np.zeros_like(total)
        for tau in live:
            n_tau = float(counts.reports[tau])
            # per_level[i, c, r]: class-c counts at Hamming distance exactly r
            cells = codes[:, tau, None] ^ masks[None, :]
            per_level = est[tau][cells].transpose(0, 2, 1) @ by_level
            cumulative = np.cumsum(per_level, axis=2).transpose(0, 2, 1)
            if radius is not None:
                r = np.full(queries.shape[0], radius)
            else:
                population = cumulative.sum(axis=2)
                enough = population * (n / n_tau) >= float(k or 1)
                if snr > 0.0:
                    noise = set_sum_variance(
                        self.oracle, population, n_tau, sizes * self.classes, self.p, self.q
                    )
                    enough &= population >= snr * np.sqrt(noise)
                r = np.where(enough.any(axis=1), np.argmax(enough, axis=1), self.bits)
            ball = cumulative[np.arange(queries.shape[0]), r]
            weight = np.full(queries.shape[0], n / n_tau)
            if k is not None:
                # the ball's estimated population rescaled to k: each table votes alike
                weight *= k / np.maximum(ball.sum(axis=1) * (n / n_tau), k)
            total += weight[:, None] * ball
            var = set_sum_variance(self.oracle, ball, n_tau, sizes[r][:, None], self.p, self.q)
            variance += weight[:, None] ** 2 * var
        return ClassScores(scores=total / live.size, stderr=np.sqrt(variance) / live.size)


@dataclass
class CellCounts:
    """The aggregator's state: int64 ``sums[T, 2^b·k]`` and ``reports[T]``."""

    sums: NDArray[np.int64]
    reports: NDArray[np.int64]

    @property
    def nbytes(self) -> int:
        return int(self.sums.nbytes + self.reports.nbytes)


def _masks_by_distance(bits: int) -> tuple[NDArray[np.int64], FloatArray]:
    """All ``2^b`` XOR masks, and the ``2^b × (b+1)`` indicator of their popcounts."""
    masks = np.arange(1 << bits, dtype=np.int64)
    weight = np.zeros_like(masks)
    for i in range(bits):
        weight += (masks >> i) & 1
    by_level: FloatArray = (weight[:, None] == np.arange(bits + 1)[None, :]).astype(np.float64)
    return masks, by_level
