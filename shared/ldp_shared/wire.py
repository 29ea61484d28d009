"""Wire types: what travels between the SDK and the aggregator.

A report carries only a client-chosen random id, the config hash and the packed
perturbed bits (base64). There is no field in which a raw value could travel.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from ldp_shared.errors import InvalidReportError

REPORT_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"
MAX_BATCH = 10_000


def checked_range(
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
) -> JsonDict:
    """The JSON-schema bounds of a number that the code checks itself.

    Passed as ``json_schema_extra`` so that the OpenAPI document states the range a value
    must lie in (a request within every stated bound is not refused for its ranges),
    while the check keeps answering with its own problem (``invalid-query``) instead of
    a generic validation failure. ``tests/aggregator/test_openapi.py`` holds the two
    together at every bound.
    """
    stated: dict[str, float | None] = {
        "exclusiveMinimum": gt,
        "minimum": ge,
        "exclusiveMaximum": lt,
        "maximum": le,
    }
    return {key: bound for key, bound in stated.items() if bound is not None}


def new_report_id() -> str:
    """A fresh random report id (128 bits, URL-safe base64)."""
    return secrets.token_urlsafe(16)


def encode_bits(packed: bytes) -> str:
    """Standard base64 (RFC 4648 §4, with padding) of a packed report."""
    return base64.b64encode(packed).decode("ascii")


def decode_bits(text: str) -> bytes:
    """Strict inverse of :func:`encode_bits`; :class:`InvalidReportError` on anything else.

    Besides the alphabet and padding, the encoding must be canonical (RFC 4648 §3.5): the
    unused bits before the padding are zero, so each byte string has one accepted text.
    """
    try:
        encoded = text.encode("ascii")
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InvalidReportError("bits are not valid base64") from None
    if base64.b64encode(raw) != encoded:
        raise InvalidReportError("bits are not canonical base64 (padding bits are set)")
    return raw


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Report(_Wire):
    """One perturbed record.

    The members' types are the request's shape (a batch with a report of another shape
    is refused whole); their values are judged report by report, each answering an
    outcome of its own (``id`` must match :data:`REPORT_ID_PATTERN`).
    """

    id: str = Field(description="client-chosen random id; retries reuse it")
    config_hash: str = Field(description="the collection's config hash")
    bits: str = Field(description="packed perturbed bits, canonical base64 with padding")


class ReportBatch(_Wire):
    reports: list[Report] = Field(min_length=1, max_length=MAX_BATCH)


ReportStatus = Literal["accepted", "duplicate", "rejected"]


class ReportOutcome(_Wire):
    id: str
    status: ReportStatus
    reason: str | None = None


class BatchResult(_Wire):
    accepted: int
    duplicate: int
    rejected: int
    outcomes: list[ReportOutcome]


class _AttributeRelease(_Wire):
    """What every released estimate of one attribute states first."""

    collection: str
    attribute: str
    mechanism: str
    n_reports: int
    epsilon: float = Field(description="exact ε spent on this attribute per record")
    record_epsilon: float = Field(description="exact ε of a whole record")
    confidence: float


class IBUStatus(_Wire):
    """How the iterative Bayesian update of ``postprocess=ibu`` ended."""

    iterations: int = Field(description="EM updates computed (at most 10,000)")
    converged: bool = Field(description="whether the last update moved the estimate ≤ tolerance")
    change: float = Field(description="L1 distance moved by the last update")
    tolerance: float


class OrdinalEstimate(_Wire):
    """A scalar of an ordered attribute (a rank), with its standard error and interval."""

    value: float
    stderr: float
    ci_low: float
    ci_high: float


class OrdinalSummary(_Wire):
    """CDF, mean rank and median rank of an attribute whose values are ordered (ranks
    ``0..d-1``), from the raw estimate normalised to sum to one, with delta-method errors."""

    cdf: list[float] = Field(description="P(rank ≤ k) for every value k, in order")
    cdf_stderr: list[float]
    cdf_ci_low: list[float]
    cdf_ci_high: list[float]
    mean_rank: OrdinalEstimate
    median_rank: OrdinalEstimate = Field(
        description="interpolated within its value: rank k spreads over [k − ½, k + ½]"
    )


class FrequencyResult(_AttributeRelease):
    """Frequency estimates of one attribute, as released to an analyst."""

    postprocess: Literal["none", "norm-sub", "simplex", "ibu"]
    values: list[str]
    estimate: list[float] = Field(description="raw unbiased frequencies (always included)")
    counts: list[float] = Field(description="raw unbiased counts, n_reports · estimate")
    stderr: list[float]
    ci_low: list[float]
    ci_high: list[float]
    interval: Literal["score", "normal"] = Field(
        default="normal",
        description=(
            "how ci_low/ci_high were formed: 'score' keeps every f in [0, 1] that the test"
            " |estimate − f| ≤ z·√Var(f) accepts (variance at f, Wilson-type; the"
            " debiased-bit mechanisms and the label), 'normal' is estimate ± z·stderr"
        ),
    )
    postprocessed: list[float] | None = Field(
        default=None, description="the estimate after the requested post-processing"
    )
    attribute_reports: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "budget 'sample': how many of the n_reports carried this attribute (absent when"
            " every report carries it)"
        ),
    )
    ibu: IBUStatus | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="postprocess=ibu: how the iteration ended (postprocessed holds its result)",
    )
    ordinal: OrdinalSummary | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="for ordered values (ordinal exponential, histogram): CDF, mean, median",
    )


class MeanResult(_AttributeRelease):
    """The mean of one numeric attribute, as released to an analyst."""

    lo: float = Field(description="the attribute's lower bound (values below were clipped)")
    hi: float = Field(description="the attribute's upper bound (values above were clipped)")
    mean: float = Field(description="unbiased mean of the clipped true values")
    stderr: float
    ci_low: float
    ci_high: float
    attribute_reports: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="budget 'sample': how many of the n_reports carried this attribute",
    )
    delta: float = Field(
        default=0.0,
        exclude_if=lambda value: value == 0,
        description="exact δ of (ε, δ) spent on this attribute per record (absent when 0)",
    )
    variance: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "estimated variance of the clipped true values (x units squared), where the"
            " mechanism's answers carry a second moment (absent otherwise)"
        ),
    )


class Quantile(_Wire):
    """One quantile of a histogram attribute, in the number's units."""

    probability: float = Field(description="the level q in (0, 1)")
    value: float = Field(description="interpolated linearly within its bin from the CDF")
    ci_low: float
    ci_high: float
    bin: int = Field(description="index of the bin the estimate falls in")


class QuantileResult(_AttributeRelease):
    """Quantiles of a histogram attribute, as released to an analyst."""

    edges: list[float] = Field(description="the bin edges; values were clipped to the ends")
    quantiles: list[Quantile]
    interval: Literal["inverted-cdf-band"] = Field(
        default="inverted-cdf-band",
        description=(
            "every x at which the normal test of F(x) = q does not reject (Woodruff 1952)"
        ),
    )
    attribute_reports: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="budget 'sample': how many of the n_reports carried this attribute",
    )


# ---------------------------------------------------------------- naive Bayes (issue 3)
#
# Yilmaz, Al-Rubaie and Chang, "Locally Differentially Private Naive Bayes
# Classification" (arXiv:1905.01039, 2019): the model is trained from the estimated joint
# counts N̂(x_j = v, c) of each feature with the class (ldp_shared.analyses.naive_bayes).

MAX_PREDICT_RECORDS = 10_000
MODEL_ID_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"


CountRepair = Literal["posterior-mean", "clamp", "norm-sub"]
"""How a noisy joint count is made non-negative before smoothing
(``ldp_shared.analyses.naive_bayes``)."""


class NaiveBayesTrainRequest(_Wire):
    """What an analyst may choose when training (all optional)."""

    alpha: float = Field(
        default=1.0,
        ge=0.0,
        allow_inf_nan=False,
        description="additive (Laplace) smoothing added to every repaired joint count",
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


class NaiveBayesSmoothing(_Wire):
    """How raw unbiased counts became the model's probabilities (stated in every model)."""

    alpha: float
    repair: CountRepair
    floor: float = Field(description="smallest smoothed count (keeps every logarithm finite)")
    rule: str = Field(description="the formula, in words")


class NaiveBayesFeature(_Wire):
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


class NaiveBayesModel(_Wire):
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


class NaiveBayesPredictRequest(_Wire):
    """Records to classify: the analyst's own queries, in the clear, never stored."""

    records: list[dict[str, str]] = Field(min_length=1, max_length=MAX_PREDICT_RECORDS)


class NaiveBayesPrediction(_Wire):
    predicted: str
    probabilities: list[float] = Field(description="P(c | record), in the model's class order")


class NaiveBayesPredictions(_Wire):
    model_id: str
    label: str
    classes: list[str]
    predictions: list[NaiveBayesPrediction]


class CategoricalNBExport(_Wire):
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
