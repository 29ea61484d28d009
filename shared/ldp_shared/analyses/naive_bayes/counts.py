"""Joint counts of each feature with the class, and the class counts (steps 1 and 2).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019). A label collection reports each
feature ``j`` jointly with the class ``c`` (cell ``x_j·k + c``, unary encoding), so its
statistics hold, per feature, the counters of the ``d_j·k`` joint cells
(see :mod:`ldp_shared.analyses.joint`). Training never reads a report:

1. Joint counts. Over the ``n_j`` reports that carried feature ``j`` (all ``n`` under
   the ``split`` budget), with ``S_vc`` of them having bit ``(v, c)`` set:
   ``N̂_j(v, c) = (S_vc - n_j q) / (p - q) = n_j·f̂(v, c)``, unbiased, with standard error
   ``n_j·sqrt(Var f̂)``, ``Var f̂ = [f p(1-p) + (1-f) q(1-q)] / (n_j (p-q)²)``.
2. Class counts. ``N̂(c) = n·π̂(c)``, ``π̂`` the class distribution combined over the
   features (:func:`ldp_shared.analyses.joint.label_estimate`).

Intervals. Each count is ``m·f̂`` for a frequency ``f̂`` (``m = n_j`` for a joint count,
``n`` for a class count) whose variance is a quadratic ``V(f)`` of the true frequency
(:class:`~ldp_shared.intervals.VarianceCurve`: one cell of the kernel for ``N̂_j(v, c)``,
the label's combination for ``N̂(c)``). The released interval is the frequency's
continuity-corrected score interval (Wilson-type, :func:`~ldp_shared.intervals.score_bounds`,
half a report of correction) times ``m``: the counts ``m·f`` that the test
``|f̂ − f| − h ≤ z·√V(f)`` accepts, within [0, m] (or wholly outside it where the test
rejects every count in [0, m], as for frequencies). Without noise (``p = 1``, ``q = 0``)
``V = 0`` and the interval is the exact count ± ½ (the correction alone). The
intervals are released only: repair, smoothing and prediction never read them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ldp_shared.analyses.joint import (
    FeatureChannel,
    Sums,
    attribute_reports,
    attribute_sums,
    label_curve,
)
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.intervals import VarianceCurve, score_bounds
from ldp_shared.kernel import FloatArray, report_step


def score_count_bounds(
    counts: FloatArray, m: int, curve: VarianceCurve, step: float, z: float
) -> tuple[FloatArray, FloatArray]:
    """The score interval of a count ``m·f̂`` (module docstring): ``m`` times that of
    ``f̂`` with variance ``curve`` and half of ``step``, the move of ``f̂`` by one report."""
    low, high = score_bounds(counts / m, curve, z, step / 2.0)
    return m * low, m * high


@dataclass(frozen=True)
class FeatureCounts:
    """Estimated joint counts of one feature with the class (class-major, ``k × d``)."""

    name: str
    values: list[str]
    mechanism: str
    epsilon: float
    p: float
    q: float
    n_reports: int
    counts: FloatArray
    stderr: FloatArray

    @property
    def curve(self) -> VarianceCurve:
        """``Var f̂(v, c)`` as a function of the cell's true frequency among the ``n_j``."""
        return VarianceCurve.bit_sum(self.n_reports, self.p, self.q)

    def score_interval(self, z: float) -> tuple[FloatArray, FloatArray]:
        """The counts' score intervals at the normal quantile ``z`` (module docstring)."""
        step = report_step(self.n_reports, self.p, self.q)
        return score_count_bounds(self.counts, self.n_reports, self.curve, step, z)


def counts_from_sums(
    name: str,
    values: Sequence[str],
    k: int,
    sums: Sums,
    n_reports: int,
    p: float,
    q: float,
    *,
    mechanism: str = "oue",
    epsilon: float = math.inf,
) -> FeatureCounts:
    """Joint counts ``N̂(v, c) = (S_vc - n_j q)/(p - q)`` from the ``d·k`` counters of
    cells ``v·k + c`` (``p = 1, q = 0`` gives the exact counts)."""
    d = len(values)
    s = np.asarray(sums, dtype=np.float64).reshape(d, k).T
    counts = (s - n_reports * q) / (p - q)
    variance = VarianceCurve.bit_sum(n_reports, p, q)(counts / n_reports)
    return FeatureCounts(
        name=name,
        values=list(values),
        mechanism=mechanism,
        epsilon=epsilon,
        p=p,
        q=q,
        n_reports=n_reports,
        counts=np.ascontiguousarray(counts),
        stderr=n_reports * np.sqrt(variance),
    )


def require_label(config: CollectionConfig) -> None:
    """:class:`InvalidQueryError` unless ``config`` is a label collection."""
    if config.label is None:
        raise InvalidQueryError(
            f"collection {config.name!r} has no label: naive Bayes needs a collection created"
            " with one (CollectionSpec.label)"
        )


def feature_counts(config: CollectionConfig, n: int, sums: Sums) -> list[FeatureCounts]:
    """The joint counts of every feature of a label collection, from its statistics."""
    require_label(config)
    out = []
    for attribute in config.features:
        n_j = attribute_reports(attribute, n, sums)
        if n_j <= 0:
            raise InsufficientReportsError(
                f"no report has carried feature {attribute.name!r} yet: nothing to train from"
            )
        out.append(_counts_of(attribute, n_j, attribute_sums(attribute, sums)))
    return out


def _counts_of(attribute: AttributeConfig, n_j: int, sums: FloatArray) -> FeatureCounts:
    return counts_from_sums(
        attribute.name,
        attribute.values,
        attribute.classes,
        sums,
        n_j,
        *attribute.bit_channel,
        mechanism=attribute.mechanism,
        epsilon=attribute.epsilon,
    )


@dataclass(frozen=True)
class ClassCounts:
    """``N̂(c)`` over all ``n`` reports, its standard error, and the variance curve of
    ``π̂(c) = N̂(c)/n`` with the move of ``π̂`` by one report (for the intervals)."""

    counts: FloatArray
    stderr: FloatArray
    n_reports: int
    curve: VarianceCurve
    step: float

    def score_interval(self, z: float) -> tuple[FloatArray, FloatArray]:
        """The counts' score intervals at the normal quantile ``z`` (module docstring)."""
        return score_count_bounds(self.counts, self.n_reports, self.curve, self.step, z)


def class_counts(features: Sequence[FeatureCounts], n: int, weights: FloatArray) -> ClassCounts:
    """``N̂(c) = n·Σ_j w_j ĝ_j(c)``, ``ĝ_j(c) = Σ_v N̂_j(v, c)/n_j`` (see :mod:`.joint`)."""
    k = features[0].counts.shape[0]
    pi = np.zeros(k)
    for w, f in zip(weights, features, strict=True):
        pi += w * f.counts.sum(axis=1) / f.n_reports
    channels = [FeatureChannel(f.n_reports, f.counts.shape[1], f.p, f.q) for f in features]
    curve, step = label_curve(weights, channels, n)
    stderr = n * np.sqrt(curve(pi))
    return ClassCounts(counts=n * pi, stderr=stderr, n_reports=n, curve=curve, step=step)
