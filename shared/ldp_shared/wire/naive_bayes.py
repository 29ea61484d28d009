"""Wire types of naive Bayes models (JSON over HTTP).

After Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
Classification" (arXiv:1905.01039, 2019): the model is trained from the estimated joint
counts N̂(x_j = v, c) of each feature with the class (:mod:`ldp_shared.analyses.naive_bayes`).
``POST /v1/collections/{name}/models/naive-bayes`` takes a :class:`NaiveBayesTrainRequest`
and answers the stored :class:`NaiveBayesModel`; ``.../{id}/predict`` takes a
:class:`NaiveBayesPredictRequest` and answers :class:`NaiveBayesPredictions`;
``.../{id}/export`` answers a :class:`CategoricalNBExport`. :mod:`ldp_shared.wire`
re-exports every name.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import INTERVAL, Columns, Tabular, from_rows
from ldp_shared.wire.base import WireModel, central_field

MAX_PREDICT_RECORDS = 10_000
MODEL_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"


CountRepair = Literal["posterior-mean", "clamp", "norm-sub"]
"""How a noisy joint count is made non-negative before smoothing
(``ldp_shared.analyses.naive_bayes``)."""

COUNT_REPAIRS: tuple[CountRepair, ...] = get_args(CountRepair)
"""The members of :data:`CountRepair`, in its order (what a form may offer)."""

MAX_ALPHA = float(2**53)
"""Largest additive smoothing α a model may be trained with.

α is a pseudo-count added to every joint cell, so it means something on the scale of the
counts (up to a few times ``n_j``): an α far above every count makes each table uniform.
At 2^53 ≈ 9.0e15 float64 can no longer tell α + 1 from α: one report no longer moves a
smoothed count, and every probability is within about n_j/α of uniform (below 1e-6 for a
billion reports). Past that bound α only brings the sums Σ_v Ñ(v, c) closer to overflow
(near 1.8e308, where the logarithms become infinite and the model cannot be stored)."""

MODEL_COLUMNS = (
    "feature", "value", "class", "count", *INTERVAL,
    "smoothed_count", "probability", "log_prob",
)  # fmt: skip
"""The columns of a model's rows (``to_frame()``), one per feature, value and class."""


class NaiveBayesTrainRequest(RequestModel):
    """What an analyst may choose when training (all optional)."""

    alpha: float = Field(
        default=1.0,
        ge=0.0,
        le=MAX_ALPHA,
        allow_inf_nan=False,
        description=(
            "additive (Laplace) smoothing added to every repaired joint count; at most 2^53:"
            " there float64 can no longer add one report to α, and every table is within"
            " about n_j/α of uniform, so a larger α only brings the sums nearer to overflow"
        ),
    )
    repair: CountRepair = Field(
        default="posterior-mean",
        description=(
            "posterior-mean: E[N | N̂, N ≥ 0] under a flat prior and normal noise "
            "(N̂ + σ·φ(N̂/σ)/Φ(N̂/σ)); clamp: max(N̂, 0); norm-sub: each class's row of"
            " a feature's table made non-negative by a common shift so that it sums to the"
            " class's count (Norm-Sub, Wang et al. NDSS 2020), the class counts to n"
        ),
    )
    confidence: float = Field(
        default=0.95, gt=0.0, lt=1.0, description="level of the counts' intervals"
    )


class NaiveBayesSmoothing(WireModel):
    """How raw unbiased counts became the model's probabilities (stated in every model)."""

    alpha: float
    repair: CountRepair
    floor: float = Field(description="smallest smoothed count (keeps every logarithm finite)")
    rule: str = Field(description="the formula, in words")


class NaiveBayesFeature(WireModel):
    """One feature's conditional probability table and the counts it was derived from.

    Matrices are class-major: row ``c`` (in ``classes`` order), column ``v`` (in
    ``values`` order), as scikit-learn's ``CategoricalNB`` keeps them.
    """

    name: str
    values: list[str]
    mechanism: str
    epsilon: float = Field(description="exact ε of one report of this feature")
    p: float
    q: float
    n_reports: int = Field(description="reports that carried this feature (n_j)")
    counts: list[list[float]] = Field(
        description="raw unbiased joint counts N̂(x=v, c) = n_j·f̂ among those reports"
    )
    stderr: list[list[float]]
    ci_low: list[list[float]]
    ci_high: list[list[float]]
    negative_counts: int = Field(description="cells whose raw estimate was below 0 (clamped)")
    smoothed_counts: list[list[float]]
    probabilities: list[list[float]] = Field(description="P(x = v | c)")
    log_prob: list[list[float]] = Field(description="ln P(x = v | c)")


class NaiveBayesModel(WireModel, Tabular):
    """A naive Bayes classifier trained from a label collection's sufficient statistics."""

    id: str
    kind: Literal["naive-bayes"] = "naive-bayes"
    collection: str
    config_hash: str
    created_day: str = Field(description="UTC day of training (ISO 8601)")
    label: str
    classes: list[str]
    n_reports: int = Field(description="reports the model was trained from")
    epsilon: float = Field(description="exact ε of one record of the collection")
    budget: Literal["split", "sample"]
    confidence: float
    interval: Literal["score", "normal"] = Field(
        default="normal",
        description=(
            "how every ci_low/ci_high of the model (class counts and feature tables) was"
            " formed: 'score' is m times the continuity-corrected score interval of the"
            " count's frequency (m = n_reports of the count: every count m·f in [0, m]"
            " that the test |count/m − f| − h ≤ z·√Var(f) accepts, variance at f,"
            " h half of one report's move, Wilson-type), 'normal' is count ± z·stderr"
            " (models trained before score intervals)"
        ),
    )
    class_counts: list[float] = Field(
        description="raw unbiased N̂(c) over all reports (combined over the features)"
    )
    class_counts_stderr: list[float]
    class_counts_ci_low: list[float]
    class_counts_ci_high: list[float]
    class_smoothed_counts: list[float]
    class_prior: list[float]
    class_log_prior: list[float]
    features: list[NaiveBayesFeature]
    smoothing: NaiveBayesSmoothing
    central: CentralRelease | None = central_field()

    def frame_columns(self) -> Columns:
        """One row per feature, value and class (:data:`MODEL_COLUMNS`); the classes'
        priors first, as rows whose ``feature`` and ``value`` are ``None``."""
        rows: list[dict[str, Any]] = [
            {
                "class": label,
                "count": self.class_counts[c],
                "stderr": self.class_counts_stderr[c],
                "ci_low": self.class_counts_ci_low[c],
                "ci_high": self.class_counts_ci_high[c],
                "smoothed_count": self.class_smoothed_counts[c],
                "probability": self.class_prior[c],
                "log_prob": self.class_log_prior[c],
            }
            for c, label in enumerate(self.classes)
        ]
        for feature in self.features:
            for c, label in enumerate(self.classes):
                for v, value in enumerate(feature.values):
                    rows.append(
                        {
                            "feature": feature.name,
                            "value": value,
                            "class": label,
                            "count": feature.counts[c][v],
                            "stderr": feature.stderr[c][v],
                            "ci_low": feature.ci_low[c][v],
                            "ci_high": feature.ci_high[c][v],
                            "smoothed_count": feature.smoothed_counts[c][v],
                            "probability": feature.probabilities[c][v],
                            "log_prob": feature.log_prob[c][v],
                        }
                    )
        return from_rows(rows, MODEL_COLUMNS)


class NaiveBayesPredictRequest(RequestModel):
    """Records to classify: the analyst's own queries, in the clear, never stored."""

    records: list[dict[str, str]] = Field(min_length=1, max_length=MAX_PREDICT_RECORDS)


class NaiveBayesPrediction(WireModel):
    predicted: str
    probabilities: list[float] = Field(description="P(c | record), in the model's class order")


class NaiveBayesPredictions(WireModel):
    model_id: str
    label: str
    classes: list[str]
    predictions: list[NaiveBayesPrediction]


class CategoricalNBExport(WireModel):
    """The model as the attributes of a fitted scikit-learn ``CategoricalNB``.

    ``feature_log_prob_[j]`` is ``k × d_j``; a record is encoded as the index of each
    feature's value in ``categories[j]``, in ``feature_names`` order. A ``CategoricalNB``
    with these attributes set (see ``ldp_shared.analyses.naive_bayes.to_categorical_nb``) predicts
    exactly as the model.
    """

    feature_names: list[str]
    categories: list[list[str]]
    classes_: list[str]
    class_count_: list[float]
    class_log_prior_: list[float]
    category_count_: list[list[list[float]]]
    feature_log_prob_: list[list[list[float]]]
    n_categories_: list[int]
    n_features_in_: int
    alpha: float
