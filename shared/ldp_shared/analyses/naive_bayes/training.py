"""Training: smoothing and probabilities, and the model as released (steps 3 and 4).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019). The counts of :mod:`.counts`,
repaired by :func:`~.repair.repair_counts` (``R``), are smoothed with ``α`` the additive
(Laplace) smoothing,

    Ñ_j(v, c) = R(N̂_j(v, c), σ_j(v, c)) + α,      Ñ(c) = R(N̂(c), σ(c)),

each at least :data:`~.repair.FLOOR`. A noisy cell can then neither dominate a prediction
by being estimated at exactly 0 nor stay negative. Without noise (``p = 1``, ``q = 0``,
``σ = 0``) ``R(N, 0) = N`` and the model is exactly scikit-learn's
``CategoricalNB(alpha=α)`` fit on the true records (tested). The probabilities are
``P(x_j = v | c) = Ñ_j(v, c) / Σ_v' Ñ_j(v', c)`` and ``P(c) = Ñ(c) / Σ_c' Ñ(c')``.

:func:`fit_collection` trains from a label collection's statistics; :func:`describe`
gives the released :class:`~ldp_shared.wire.naive_bayes.NaiveBayesModel` (counts, standard errors,
score intervals of the counts as in :mod:`.counts`, smoothed counts, probabilities);
:func:`build_model` does both. The intervals are released only: the smoothing and the
probabilities use the counts and standard errors alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ldp_shared.analyses.joint import Sums, label_weights
from ldp_shared.analyses.naive_bayes.counts import (
    ClassCounts,
    FeatureCounts,
    class_counts,
    feature_counts,
)
from ldp_shared.analyses.naive_bayes.repair import (
    FLOOR,
    consistent_class_counts,
    consistent_table,
    repair_counts,
    smoothing_rule,
)
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.kernel import FloatArray, z_value
from ldp_shared.wire.naive_bayes import (
    MAX_ALPHA,
    CountRepair,
    NaiveBayesFeature,
    NaiveBayesModel,
    NaiveBayesSmoothing,
    NaiveBayesTrainRequest,
)


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
    if not (math.isfinite(alpha) and 0.0 <= alpha <= MAX_ALPHA):
        raise InvalidQueryError(f"alpha must be a number from 0 to 2^53, got {alpha!r}")
    smoothed: list[FloatArray] = []
    log_prob: list[FloatArray] = []
    if repair == "norm-sub":
        repaired_prior = consistent_class_counts(class_totals.counts, class_totals.n_reports)
        share = repaired_prior / max(float(repaired_prior.sum()), FLOOR)
        tables = [consistent_table(f.counts, f.n_reports, share) for f in features]
    else:
        repaired_prior = repair_counts(class_totals.counts, class_totals.stderr, repair)
        tables = [repair_counts(f.counts, f.stderr, repair) for f in features]
    for table in tables:
        cat = np.maximum(table + alpha, FLOOR)
        smoothed.append(cat)
        # the same expression as CategoricalNB._update_feature_log_prob
        log_prob.append(np.log(cat) - np.log(cat.sum(axis=1).reshape(-1, 1)))
    prior = np.maximum(repaired_prior, FLOOR)
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
    model = describe(
        config,
        trained,
        n,
        request,
        model_id=model_id,
        created_day=created_day,
        epsilon=config.epsilon,
    )
    require_finite(model)
    return model


def _first_non_finite(value: object, where: str) -> str | None:
    """The path of the first number in ``value`` that is not finite (``None``: all are)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else where
    if isinstance(value, dict):
        items: Iterable[tuple[str, object]] = ((f"{where}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for path, item in items:
        found = _first_non_finite(item, path)
        if found is not None:
            return found
    return None


def require_finite(model: NaiveBayesModel) -> None:
    """:class:`InvalidQueryError` if a number of the model is infinite or NaN.

    JSON has no such numbers (they would be written as ``null``), so a model holding one
    could be neither answered as stated nor read back once stored.
    """
    found = _first_non_finite(model.model_dump(), "model")
    if found is not None:
        raise InvalidQueryError(
            f"training gave a number that is not finite ({found}, alpha={model.smoothing.alpha!r});"
            " nothing was stored: train again with a smaller alpha"
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
        low, high = f.score_interval(z)
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
                ci_low=_rows(low),
                ci_high=_rows(high),
                negative_counts=int(np.sum(f.counts < 0.0)),
                smoothed_counts=_rows(smoothed),
                probabilities=_rows(np.exp(log_prob)),
                log_prob=_rows(log_prob),
            )
        )
    totals = trained.classes_counts
    class_low, class_high = totals.score_interval(z)
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
        interval="score",
        class_counts=totals.counts.tolist(),
        class_counts_stderr=totals.stderr.tolist(),
        class_counts_ci_low=class_low.tolist(),
        class_counts_ci_high=class_high.tolist(),
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
