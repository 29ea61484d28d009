"""Frequency estimates from joint (feature × class) reports and from sampled reports.

Label collections (Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive
Bayes Classification", arXiv:1905.01039, 2019) report feature ``j`` of a record of class
``c`` as cell ``x_j·k + c`` of ``d_j·k`` unary-encoded cells. Over the ``n_j`` reports
carrying feature ``j``, with ``S_vc`` of them having bit ``(v, c)`` set, the debiased
frequency of a cell is (the debiased-bit kernel, :mod:`ldp_shared.kernel`)

    f̂(v, c) = (S_vc/n_j - q) / (p - q),   Var = [f p(1-p) + (1-f) q(1-q)] / (n_j (p-q)²).

Given the records, the perturbed bits are independent, so sums of cells have variances
that add up. Each report has exactly one true cell, hence

* the feature's marginal ``f̂(v) = Σ_c f̂(v, c)`` (``k`` cells, one of them true in a
  fraction ``f_v`` of the reports): ``Var = [f_v p(1-p) + (k - f_v) q(1-q)] / (n_j (p-q)²)``;
* the class distribution seen through feature ``j``, ``ĝ_j(c) = Σ_v f̂(v, c)``
  (``d_j`` cells): ``Var = [g p(1-p) + (d_j - g) q(1-q)] / (n_j (p-q)²)``. The features'
  perturbations are independent, so the label's estimate combines them with weights
  ``w_j ∝ 1/V_j(1/k)`` fixed in advance (the variance at the uniform class frequency,
  so the weights do not depend on the data and the combination stays unbiased):
  ``π̂(c) = Σ_j w_j ĝ_j(c)``, ``Var = Σ_j w_j² V_j(π̂(c))``.

Budget ``sample``: the ``n_j`` reports carrying attribute ``j`` are a uniformly random
subset of all ``n``. Their frequency estimates the frequency among those ``n_j``
reporters; as an estimate of the frequency among all ``n`` it has the additional
sampling variance (without replacement) ``f(1-f)/n_j · (n-n_j)/(n-1)``, which is added
to every released standard error (it is zero when ``n_j = n``, i.e. under ``split``).
For the label, treating the features' (disjoint, hence negatively correlated) samples
as independent overstates that term slightly: the intervals err on the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.intervals import VarianceCurve
from ldp_shared.kernel import FloatArray, FrequencyEstimate, frequency_variance, report_step
from ldp_shared.mechanisms.base import Blocks
from ldp_shared.mechanisms.categorical import BitwiseRandomizer
from ldp_shared.mechanisms.likelihood import ReportChannel

Sums = NDArray[np.integer] | FloatArray


def attribute_reports(attribute: AttributeConfig, n: int, sums: Sums) -> int:
    """``n_j``: how many of the ``n`` reports carried the attribute (all of them under split)."""
    if attribute.count_offset is None:
        return n
    return int(sums[attribute.count_offset])


def attribute_sums(attribute: AttributeConfig, sums: Sums) -> FloatArray:
    """The attribute's per-cell counters (as floats: exact for counts below 2^53)."""
    block = sums[attribute.stats_offset : attribute.stats_offset + attribute.cells]
    return np.asarray(block, dtype=np.float64)


def sampling_variance(f: FloatArray, n_j: int, n: int) -> FloatArray:
    """``f(1-f)/n_j · (n-n_j)/(n-1)``: a uniform sample of ``n_j`` of ``n`` reporters."""
    fc = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
    return finite_population_variance(fc * (1.0 - fc), n_j, n)


def finite_population_variance(unit: FloatArray, n_j: int, n: int) -> FloatArray:
    """``σ²/n_j · (n-n_j)/(n-1)``: the variance of a mean over a uniform sample of ``n_j``
    of ``n`` reporters whose values have variance ``σ² = unit``."""
    if n_j >= n or n <= 1:
        return np.zeros_like(unit)
    out: FloatArray = unit / n_j * (n - n_j) / (n - 1)
    return out


def sum_variance(f: FloatArray, cells: int, n_j: int, p: float, q: float) -> FloatArray:
    """Variance of a sum of ``cells`` debiased frequencies of which, in a fraction ``f`` of
    the reports, one is the true cell: ``[f p(1-p) + (cells - f) q(1-q)] / (n_j (p-q)²)``."""
    fc = np.clip(np.asarray(f, dtype=np.float64), 0.0, 1.0)
    out: FloatArray = (fc * p * (1.0 - p) + (cells - fc) * q * (1.0 - q)) / (n_j * (p - q) ** 2)
    return out


def _require_reports(attribute: AttributeConfig, n_j: int) -> None:
    if n_j <= 0:
        raise InsufficientReportsError(
            f"no report has carried attribute {attribute.name!r} yet (budget 'sample')"
        )


@dataclass(frozen=True)
class JointEstimate:
    """Debiased joint frequencies of one feature with the class, class-major (``k × d``)."""

    attribute: AttributeConfig
    n_reports: int
    frequencies: FloatArray
    variance: FloatArray

    @property
    def counts(self) -> FloatArray:
        """``N̂(x=v, c) = n_j·f̂(v, c)``: estimated reporters (among the ``n_j``) per cell."""
        return self.frequencies * self.n_reports


def joint_estimate(attribute: AttributeConfig, n: int, sums: Sums) -> JointEstimate:
    """The joint frequencies of feature ``attribute`` from the collection's statistics."""
    if not attribute.is_feature:
        raise InvalidQueryError(f"attribute {attribute.name!r} is not reported with a label")
    n_j = attribute_reports(attribute, n, sums)
    _require_reports(attribute, n_j)
    (p, q), k = attribute.bit_channel, attribute.classes
    # cell x·k + c → row x, column c; transposed to class-major as CategoricalNB keeps it
    f = ((attribute_sums(attribute, sums) / n_j - q) / (p - q)).reshape(attribute.d, k).T
    return JointEstimate(
        attribute=attribute,
        n_reports=n_j,
        frequencies=np.ascontiguousarray(f),
        variance=frequency_variance(f, n_j, p, q),
    )


def sampling_curve(n_j: int, n: int) -> VarianceCurve:
    """:func:`sampling_variance` as a function of ``f``: ``f(1-f)/n_j · (n-n_j)/(n-1)``."""
    scale = 0.0 if n_j >= n or n <= 1 else (n - n_j) / (n_j * (n - 1))
    return VarianceCurve.bernoulli(scale)


def feature_marginal(
    attribute: AttributeConfig, n: int, sums: Sums, confidence: float = 0.95
) -> FrequencyEstimate:
    """``f̂(v) = Σ_c f̂(v, c)`` for a feature, with its variance (module docstring)."""
    joint = joint_estimate(attribute, n, sums)
    f = joint.frequencies.sum(axis=0)
    p, q = attribute.bit_channel
    curve = VarianceCurve.bit_sum(joint.n_reports, p, q, attribute.classes)
    curve = curve + sampling_curve(joint.n_reports, n)
    return FrequencyEstimate.score(n, f, curve, confidence, report_step(joint.n_reports, p, q))


def label_weights(config: CollectionConfig, n: int, sums: Sums) -> FloatArray:
    """The features' weights ``w_j ∝ 1/V_j(1/k)`` of :func:`label_estimate` (sum one)."""
    if config.label is None:
        raise InvalidQueryError(f"collection {config.name!r} has no label")
    at_uniform = np.array([1.0 / config.label.k])
    designs = []
    for attribute in config.features:
        n_j = attribute_reports(attribute, n, sums)
        _require_reports(attribute, n_j)
        design = sum_variance(at_uniform, attribute.d, n_j, *attribute.bit_channel)
        designs.append(float((design + sampling_variance(at_uniform, n_j, n))[0]))
    variances = np.asarray(designs)
    if np.any(variances == 0.0):  # noiseless features (p = 1, q = 0): those alone, equally
        exact: FloatArray = (variances == 0.0) / np.sum(variances == 0.0)
        return exact
    out: FloatArray = (1.0 / variances) / np.sum(1.0 / variances)
    return out


@dataclass(frozen=True)
class FeatureChannel:
    """What the label's variance needs of one feature: its ``n_j`` reports, its ``d_j``
    values and the ``(p, q)`` of each of its joint cells."""

    n_reports: int
    d: int
    p: float
    q: float


def label_curve(
    weights: FloatArray, features: Sequence[FeatureChannel], n: int
) -> tuple[VarianceCurve, float]:
    """``Var π̂(c) = Σ_j w_j² [V_j(π) + f(1-f)/n_j·(n-n_j)/(n-1)]`` as a curve in ``π``
    (module docstring), and the largest move of ``π̂`` by one report,
    ``max_j w_j/(n_j (p_j − q_j))`` (the continuity step of the score interval)."""
    curve, step = VarianceCurve.of(0.0, 0.0), 0.0
    for w, f in zip(weights, features, strict=True):
        own = VarianceCurve.bit_sum(f.n_reports, f.p, f.q, cells=f.d)
        curve = curve + (own + sampling_curve(f.n_reports, n)).scaled(w**2)
        step = max(step, float(w) * report_step(f.n_reports, f.p, f.q))
    return curve, step


def label_estimate(
    config: CollectionConfig, n: int, sums: Sums, confidence: float = 0.95
) -> FrequencyEstimate:
    """The class distribution ``π̂(c) = Σ_j w_j ĝ_j(c)``, with its variance (module docstring)."""
    weights = label_weights(config, n, sums)
    assert config.label is not None
    pi = np.zeros(config.label.k)
    joints = [joint_estimate(attribute, n, sums) for attribute in config.features]
    for w, joint in zip(weights, joints, strict=True):
        pi += w * joint.frequencies.sum(axis=1)
    channels = [
        FeatureChannel(j.n_reports, j.attribute.d, *j.attribute.bit_channel) for j in joints
    ]
    curve, step = label_curve(weights, channels, n)
    return FrequencyEstimate.score(n, pi, curve, confidence, step)


def attribute_stats(
    config: CollectionConfig,
    attribute: AttributeConfig,
    sums: Sums,
    floats: FloatArray | None = None,
) -> Blocks:
    """An attribute's statistics blocks, by name, sliced from the collection's int64
    ``sums`` and float64 ``floats`` vectors (int64 counts come back as float64: exact
    below 2^53)."""
    out: dict[str, NDArray[Any]] = {}
    int_at, float_at = attribute.stats_offset, attribute.float_offset or 0
    for block in config.randomizer(attribute).stats_layout:
        if block.dtype == "int64":
            out[block.name] = np.asarray(sums[int_at : int_at + block.length], dtype=np.float64)
            int_at += block.length
        else:
            assert floats is not None, "the collection's float statistics are needed"
            out[block.name] = np.asarray(floats[float_at : float_at + block.length])
            float_at += block.length
    return out


def attribute_estimate(
    config: CollectionConfig,
    attribute: AttributeConfig,
    n: int,
    sums: Sums,
    confidence: float,
    floats: FloatArray | None = None,
    encoded: NDArray[Any] | None = None,
) -> FrequencyEstimate:
    """A non-feature attribute's estimate by its own mechanism, over the ``n_j`` reports that
    carried it, of every value or of the ``encoded`` values a query named; under budget
    ``sample`` the sampling variance is added."""
    n_j = attribute_reports(attribute, n, sums)
    _require_reports(attribute, n_j)
    stats = attribute_stats(config, attribute, sums, floats)
    randomizer = config.randomizer(attribute)
    if encoded is None:
        own = randomizer.estimate_stats(stats, n_j, confidence)
    else:
        own = randomizer.estimate_values(stats, n_j, encoded, confidence)
    if attribute.count_offset is None:  # every report carries it
        return own
    if isinstance(randomizer, BitwiseRandomizer):
        p, q = randomizer.p, randomizer.q
        curve = VarianceCurve.bit_sum(n_j, p, q) + sampling_curve(n_j, n)
        return FrequencyEstimate.score(n, own.estimate, curve, confidence, report_step(n_j, p, q))
    unit = randomizer.unit_variance(own.estimate)
    variance = own.stderr**2 + finite_population_variance(unit, n_j, n)
    return FrequencyEstimate.normal(n, own.estimate, np.sqrt(variance), confidence)


def attribute_channel(
    config: CollectionConfig,
    attribute: AttributeConfig,
    n: int,
    sums: Sums,
    floats: FloatArray | None = None,
) -> ReportChannel | None:
    """The attribute's channel over its cells (``d·k`` for a feature) and the counts of its
    outputs among the ``n_j`` reports that carried it, for IBU; ``None`` without one."""
    n_j = attribute_reports(attribute, n, sums)
    _require_reports(attribute, n_j)
    stats = attribute_stats(config, attribute, sums, floats)
    return config.randomizer(attribute).report_channel(stats, n_j)


def attribute_covariance(
    config: CollectionConfig,
    attribute: AttributeConfig,
    n: int,
    sums: Sums,
    floats: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray] | None:
    """A non-feature attribute's unbiased estimate over the ``n_j`` reports that carried it
    and its covariance when their values are i.i.d.; ``None`` when the mechanism does not
    know it. (Under ``sample`` this covariance also bounds the error about all ``n``.)"""
    n_j = attribute_reports(attribute, n, sums)
    _require_reports(attribute, n_j)
    stats = attribute_stats(config, attribute, sums, floats)
    randomizer = config.randomizer(attribute)
    covariance = randomizer.frequency_covariance(stats, n_j)
    if covariance is None:
        return None
    return randomizer.estimate_stats(stats, n_j, 0.95).estimate, covariance
