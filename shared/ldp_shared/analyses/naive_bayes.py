"""Naive Bayes trained from class-conditional LDP reports (sufficient statistics only).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019), DESIGN.md §5. A label collection reports each
feature ``j`` jointly with the class ``c`` (cell ``x_j·k + c``, unary encoding), so its
statistics hold, per feature, the counters of the ``d_j·k`` joint cells
(see :mod:`.joint`). Training never reads a report:

1. Joint counts. Over the ``n_j`` reports that carried feature ``j`` (all ``n`` under
   the ``split`` budget), with ``S_vc`` of them having bit ``(v, c)`` set:
   ``N̂_j(v, c) = (S_vc - n_j q) / (p - q) = n_j·f̂(v, c)``, unbiased, with standard error
   ``n_j·sqrt(Var f̂)``, ``Var f̂ = [f p(1-p) + (1-f) q(1-q)] / (n_j (p-q)²)``.
2. Class counts. ``N̂(c) = n·π̂(c)``, ``π̂`` the class distribution combined over the
   features (:func:`ldp_shared.analyses.joint.label_estimate`).
3. Repair and smoothing (stated in every model). Raw estimates can be negative, and
   a count whose truth is 0 is estimated as noise around 0. Each count ``N̂`` with
   standard error ``σ`` is repaired to its posterior mean under a flat prior on
   ``N ≥ 0`` and normal noise (the truncated-normal mean, no tuning parameter),

       R(N̂, σ) = E[N | N̂, N ≥ 0] = N̂ + σ·φ(N̂/σ)/Φ(N̂/σ)

   (about ``N̂`` for a clear count, ``0.8σ`` for ``N̂ = 0``, small and positive for a
   negative ``N̂``), or, with ``repair="clamp"``, to ``max(N̂, 0)``. Then, with ``α`` the
   additive (Laplace) smoothing,

       Ñ_j(v, c) = R(N̂_j(v, c), σ_j(v, c)) + α,      Ñ(c) = R(N̂(c), σ(c)),

   each at least :data:`FLOOR`. A noisy cell can then neither dominate a prediction by
   being estimated at exactly 0 nor stay negative. Without noise (``p = 1``, ``q = 0``,
   ``σ = 0``) ``R(N, 0) = N`` and the model is exactly scikit-learn's
   ``CategoricalNB(alpha=α)`` fit on the true records (tested).
4. Probabilities. ``P(x_j = v | c) = Ñ_j(v, c) / Σ_v' Ñ_j(v', c)`` and
   ``P(c) = Ñ(c) / Σ_c' Ñ(c')``.
5. Prediction. ``argmax_c log P(c) + Σ_j log P(x_j | c)``; class probabilities are the
   normalised exponentials. The sum is taken in the order scikit-learn takes it
   (features first, then the prior), so the exported ``CategoricalNB`` predicts exactly
   the same classes.

Queries to :func:`predict` are the analyst's own records, in the clear; nothing here
stores them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.analyses.joint import (
    Sums,
    attribute_reports,
    attribute_sums,
    label_weights,
    sampling_variance,
    sum_variance,
)
from ldp_shared.codec import encode_columns, records_to_columns
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.kernel import FloatArray, frequency_variance, z_value
from ldp_shared.rand import seeded_rng
from ldp_shared.wire import (
    CategoricalNBExport,
    CountRepair,
    NaiveBayesFeature,
    NaiveBayesModel,
    NaiveBayesPrediction,
    NaiveBayesPredictions,
    NaiveBayesSmoothing,
    NaiveBayesTrainRequest,
)

FLOOR = 1e-10
"""Smallest smoothed count: keeps every logarithm finite when ``α = 0`` meets a zero count
(scikit-learn raises its ``alpha`` to the same ``1e-10`` for the same reason)."""

REPAIR_RULES = {
    "posterior-mean": "R(N̂, σ) = N̂ + σ·φ(N̂/σ)/Φ(N̂/σ), the mean of N ≥ 0 given N̂ ~ Normal(N, σ²)",
    "clamp": "R(N̂, σ) = max(N̂, 0)",
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
        raise InvalidQueryError(f"unknown repair {method!r}; use posterior-mean or clamp")
    sigma = np.broadcast_to(np.asarray(stderr, dtype=np.float64), n_hat.shape)
    out = np.maximum(n_hat, 0.0)  # σ = 0: the count is exact
    for index in zip(*np.nonzero(sigma > 0.0), strict=True):
        s = float(sigma[index])
        est = float(n_hat[index])
        out[index] = max(est + s * _inverse_mills(est / s), 0.0)
    return out


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
    variance = frequency_variance(counts / n_reports, n_reports, p, q)
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


def feature_counts(config: CollectionConfig, n: int, sums: Sums) -> list[FeatureCounts]:
    """The joint counts of every feature of a label collection, from its statistics."""
    if config.label is None:
        raise InvalidQueryError(
            f"collection {config.name!r} has no label: naive Bayes needs a collection created"
            " with one (CollectionSpec.label)"
        )
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
    """``N̂(c)`` over all ``n`` reports and its standard error."""

    counts: FloatArray
    stderr: FloatArray


def class_counts(features: Sequence[FeatureCounts], n: int, weights: FloatArray) -> ClassCounts:
    """``N̂(c) = n·Σ_j w_j ĝ_j(c)``, ``ĝ_j(c) = Σ_v N̂_j(v, c)/n_j`` (see :mod:`.joint`)."""
    k = features[0].counts.shape[0]
    pi = np.zeros(k)
    for w, f in zip(weights, features, strict=True):
        pi += w * f.counts.sum(axis=1) / f.n_reports
    variance = np.zeros(k)
    for w, f in zip(weights, features, strict=True):
        d = f.counts.shape[1]
        v = sum_variance(pi, d, f.n_reports, f.p, f.q) + sampling_variance(pi, f.n_reports, n)
        variance += w**2 * v
    return ClassCounts(counts=n * pi, stderr=n * np.sqrt(variance))


@dataclass(frozen=True)
class NaiveBayesFit:
    """The trained model as arrays (class-major tables)."""

    classes: list[str]
    features: list[FeatureCounts]
    classes_counts: ClassCounts
    alpha: float
    repair: CountRepair
    smoothed: list[FloatArray]
    log_prob: list[FloatArray]
    smoothed_class_counts: FloatArray
    class_log_prior: FloatArray


def fit(
    classes: Sequence[str],
    features: Sequence[FeatureCounts],
    class_totals: ClassCounts,
    *,
    alpha: float = 1.0,
    repair: CountRepair = "posterior-mean",
) -> NaiveBayesFit:
    """Repair, smooth and take logarithms (steps 3 and 4 of the module docstring)."""
    if not (math.isfinite(alpha) and alpha >= 0.0):
        raise InvalidQueryError(f"alpha must be a finite number >= 0, got {alpha!r}")
    smoothed: list[FloatArray] = []
    log_prob: list[FloatArray] = []
    for f in features:
        cat = np.maximum(repair_counts(f.counts, f.stderr, repair) + alpha, FLOOR)
        smoothed.append(cat)
        # the same expression as CategoricalNB._update_feature_log_prob
        log_prob.append(np.log(cat) - np.log(cat.sum(axis=1).reshape(-1, 1)))
    prior = np.maximum(repair_counts(class_totals.counts, class_totals.stderr, repair), FLOOR)
    # the same expression as CategoricalNB._update_class_log_prior
    class_log_prior = np.log(prior) - np.log(prior.sum())
    return NaiveBayesFit(
        classes=list(classes),
        features=list(features),
        classes_counts=class_totals,
        alpha=alpha,
        repair=repair,
        smoothed=smoothed,
        log_prob=log_prob,
        smoothed_class_counts=prior,
        class_log_prior=class_log_prior,
    )


def fit_collection(
    config: CollectionConfig,
    n: int,
    sums: Sums,
    *,
    alpha: float = 1.0,
    repair: CountRepair = "posterior-mean",
) -> NaiveBayesFit:
    """Train from a label collection's statistics (``n`` reports, counters ``sums``).

    :class:`InvalidQueryError` without a label; :class:`InsufficientReportsError` below
    the collection's ``release.min_reports`` or when a feature has no report yet.
    """
    features = feature_counts(config, n, sums)
    minimum = config.spec.release.min_reports
    if n < minimum:
        raise InsufficientReportsError(
            f"collection {config.name!r} has {n} reports; its release policy needs at least"
            f" {minimum} before a model is trained"
        )
    assert config.label is not None
    totals = class_counts(features, n, label_weights(config, n, sums))
    return fit(config.label.domain, features, totals, alpha=alpha, repair=repair)


def _rows(matrix: FloatArray) -> list[list[float]]:
    rows: list[list[float]] = np.asarray(matrix, dtype=np.float64).tolist()
    return rows


def build_model(
    config: CollectionConfig,
    n: int,
    sums: Sums,
    request: NaiveBayesTrainRequest,
    *,
    model_id: str,
    created_day: str,
) -> NaiveBayesModel:
    """Train and describe the model as released (counts, standard errors, smoothing)."""
    trained = fit_collection(config, n, sums, alpha=request.alpha, repair=request.repair)
    return describe(
        config,
        trained,
        n,
        request,
        model_id=model_id,
        created_day=created_day,
        epsilon=config.epsilon,
    )


def describe(
    config: CollectionConfig,
    trained: NaiveBayesFit,
    n: int,
    request: NaiveBayesTrainRequest,
    *,
    model_id: str,
    created_day: str,
    epsilon: float,
) -> NaiveBayesModel:
    """The released form of a fitted model."""
    z = z_value(request.confidence)
    assert config.label is not None
    features = []
    for f, smoothed, log_prob in zip(
        trained.features, trained.smoothed, trained.log_prob, strict=True
    ):
        features.append(
            NaiveBayesFeature(
                name=f.name,
                values=f.values,
                mechanism=f.mechanism,
                epsilon=f.epsilon,
                p=f.p,
                q=f.q,
                n_reports=f.n_reports,
                counts=_rows(f.counts),
                stderr=_rows(f.stderr),
                ci_low=_rows(f.counts - z * f.stderr),
                ci_high=_rows(f.counts + z * f.stderr),
                negative_counts=int(np.sum(f.counts < 0.0)),
                smoothed_counts=_rows(smoothed),
                probabilities=_rows(np.exp(log_prob)),
                log_prob=_rows(log_prob),
            )
        )
    totals = trained.classes_counts
    return NaiveBayesModel(
        id=model_id,
        collection=config.name,
        config_hash=config.config_hash,
        created_day=created_day,
        label=config.label.name,
        classes=trained.classes,
        n_reports=n,
        epsilon=epsilon,
        budget="sample" if config.spec.budget == "sample" else "split",
        confidence=request.confidence,
        class_counts=totals.counts.tolist(),
        class_counts_stderr=totals.stderr.tolist(),
        class_counts_ci_low=(totals.counts - z * totals.stderr).tolist(),
        class_counts_ci_high=(totals.counts + z * totals.stderr).tolist(),
        class_smoothed_counts=trained.smoothed_class_counts.tolist(),
        class_prior=np.exp(trained.class_log_prior).tolist(),
        class_log_prior=trained.class_log_prior.tolist(),
        features=features,
        smoothing=NaiveBayesSmoothing(
            alpha=request.alpha,
            repair=request.repair,
            floor=FLOOR,
            rule=smoothing_rule(request.repair),
        ),
    )


def non_private_model(
    config: CollectionConfig, records: Sequence[Mapping[str, str]], *, alpha: float = 1.0
) -> NaiveBayesModel:
    """The reference without privacy: naive Bayes on the true ``records`` (all features of
    all of them, exact counts, ``ε = ∞``). Equal to scikit-learn's ``CategoricalNB(alpha)``
    fit on the same records (tested); used by the demo and the benchmarks as the
    non-private baseline, never on collected data.
    """
    if config.label is None:
        raise InvalidQueryError(f"collection {config.name!r} has no label")
    columns = records_to_columns(config, records)
    encoded = encode_columns(config, columns)
    n = len(records)
    features = [
        counts_from_sums(
            attribute.name,
            attribute.values,
            attribute.classes,
            np.bincount(cells, minlength=attribute.cells),
            n,
            1.0,
            0.0,
            mechanism="none",
            epsilon=math.inf,
        )
        for attribute, cells in zip(config.attributes, encoded, strict=True)
        if attribute.is_feature
    ]
    equal = np.full(len(features), 1.0 / len(features))
    trained = fit(config.label.domain, features, class_counts(features, n, equal), alpha=alpha)
    request = NaiveBayesTrainRequest(alpha=alpha)
    return describe(
        config, trained, n, request, model_id="non-private", created_day="", epsilon=math.inf
    )


# ------------------------------------------------------------------------ prediction


def encode_queries(
    model: NaiveBayesModel, records: Sequence[Mapping[str, Any]]
) -> NDArray[np.int64]:
    """Query records as an ``n × m`` matrix of value indices (features in model order).

    Each record names every feature once; it may also carry the label, which is ignored.
    :class:`InvalidQueryError` for a missing or unknown attribute, or a value outside a
    feature's domain.
    """
    names = [f.name for f in model.features]
    lookups = [{v: i for i, v in enumerate(f.values)} for f in model.features]
    allowed = {*names, model.label}
    out = np.empty((len(records), len(names)), dtype=np.int64)
    for row, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidQueryError(f"record {row} is not a mapping of feature to value")
        missing = [name for name in names if name not in record]
        unknown = sorted(str(key) for key in record if key not in allowed)
        if missing or unknown:
            raise InvalidQueryError(
                f"record {row}: missing features {missing}, unknown attributes {unknown}"
                f" (the model's features are {', '.join(names)})"
            )
        for column, (name, lookup) in enumerate(zip(names, lookups, strict=True)):
            value = record[name]
            index = lookup.get(value) if isinstance(value, str) else None
            if index is None:
                raise InvalidQueryError(
                    f"record {row}: {value!r} is not a value of feature {name!r}"
                    f" (its values are {', '.join(model.features[column].values)})"
                )
            out[row, column] = index
    return out


def joint_log_likelihood(model: NaiveBayesModel, x: NDArray[np.int64]) -> FloatArray:
    """``log P(c) + Σ_j log P(x_j | c)`` per row and class, summed as scikit-learn does."""
    jll = np.zeros((x.shape[0], len(model.classes)))
    for column, feature in enumerate(model.features):
        jll += np.asarray(feature.log_prob, dtype=np.float64)[:, x[:, column]].T
    total: FloatArray = jll + np.asarray(model.class_log_prior, dtype=np.float64)
    return total


def predict_proba(model: NaiveBayesModel, x: NDArray[np.int64]) -> FloatArray:
    """``P(c | x)``: the joint log-likelihoods normalised (log-sum-exp)."""
    jll = joint_log_likelihood(model, x)
    top = jll.max(axis=1, keepdims=True)
    log_norm = top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True))
    out: FloatArray = np.exp(jll - log_norm)
    return out


def predict(model: NaiveBayesModel, records: Sequence[Mapping[str, Any]]) -> NaiveBayesPredictions:
    """Classify the analyst's records: the predicted class and the class probabilities."""
    x = encode_queries(model, records)
    jll = joint_log_likelihood(model, x)
    winners = jll.argmax(axis=1)
    probabilities = predict_proba(model, x)
    return NaiveBayesPredictions(
        model_id=model.id,
        label=model.label,
        classes=model.classes,
        predictions=[
            NaiveBayesPrediction(predicted=model.classes[int(c)], probabilities=row)
            for c, row in zip(winners.tolist(), probabilities.tolist(), strict=True)
        ],
    )


# ------------------------------------------------------------------------ export


def export_categorical_nb(model: NaiveBayesModel) -> CategoricalNBExport:
    """The model in the form of a fitted scikit-learn ``CategoricalNB``.

    ``class_count_`` and ``category_count_`` are the smoothed counts (``Ñ``); the
    logarithms are the model's own, so the two predict identically.
    """
    return CategoricalNBExport(
        feature_names=[f.name for f in model.features],
        categories=[f.values for f in model.features],
        classes_=model.classes,
        class_count_=model.class_smoothed_counts,
        class_log_prior_=model.class_log_prior,
        category_count_=[f.smoothed_counts for f in model.features],
        feature_log_prob_=[f.log_prob for f in model.features],
        n_categories_=[len(f.values) for f in model.features],
        n_features_in_=len(model.features),
        alpha=model.smoothing.alpha,
    )


def to_categorical_nb(export: CategoricalNBExport) -> Any:
    """A scikit-learn ``CategoricalNB`` with the exported attributes set (needs scikit-learn).

    Encode records with :func:`encode_queries` (or each value's index in
    ``export.categories[j]``) before calling its ``predict``.
    """
    try:
        from sklearn.naive_bayes import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            CategoricalNB,
        )
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "to_categorical_nb needs scikit-learn (pip install scikit-learn)"
        ) from error
    nb = CategoricalNB(alpha=max(export.alpha, FLOOR), min_categories=export.n_categories_)
    nb.classes_ = np.asarray(export.classes_, dtype=object)
    nb.class_count_ = np.asarray(export.class_count_, dtype=np.float64)
    nb.class_log_prior_ = np.asarray(export.class_log_prior_, dtype=np.float64)
    nb.category_count_ = [np.asarray(c, dtype=np.float64) for c in export.category_count_]
    nb.feature_log_prob_ = [np.asarray(t, dtype=np.float64) for t in export.feature_log_prob_]
    nb.n_categories_ = np.asarray(export.n_categories_, dtype=np.int64)
    nb.n_features_in_ = export.n_features_in_
    return nb


# ------------------------------------------------------------------------ evaluation helpers


def holdout_split(
    records: Sequence[Mapping[str, str]], test_fraction: float = 0.2, seed: int = 20190503
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A fixed seeded split into (training, held-out test) records, each record in one part.

    Replicate only the training part to simulate more clients; the test part must
    never reach the training data.
    """
    if not 0.0 < test_fraction < 1.0:
        raise InvalidQueryError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    order = seeded_rng(seed).permutation(len(records))
    n_test = round(len(records) * test_fraction)
    test = [dict(records[i]) for i in order[:n_test]]
    train = [dict(records[i]) for i in order[n_test:]]
    return train, test


def accuracy(model: NaiveBayesModel, records: Sequence[Mapping[str, str]]) -> float:
    """The fraction of ``records`` (with their labels) that the model classifies right."""
    predicted = predict(model, records).predictions
    hits = sum(p.predicted == r[model.label] for p, r in zip(predicted, records, strict=True))
    return hits / len(records)
