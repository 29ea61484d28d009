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

from ldp_shared.central import CentralRelease
from ldp_shared.errors import InvalidReportError
from ldp_shared.naive_bayes_wire import (
    COUNT_REPAIRS,
    MAX_ALPHA,
    MAX_PREDICT_RECORDS,
    MODEL_ID_PATTERN,
    CategoricalNBExport,
    CountRepair,
    NaiveBayesFeature,
    NaiveBayesModel,
    NaiveBayesPrediction,
    NaiveBayesPredictions,
    NaiveBayesPredictRequest,
    NaiveBayesSmoothing,
    NaiveBayesTrainRequest,
)
from ldp_shared.request_model import RequestModel
from ldp_shared.tabular import Tabular

# The naive Bayes types are defined in ldp_shared.naive_bayes_wire and re-exported here.
__all__ = [
    "COUNT_REPAIRS",
    "MAX_ALPHA",
    "MAX_BATCH",
    "MAX_PREDICT_RECORDS",
    "MODEL_ID_PATTERN",
    "REPORT_ID_PATTERN",
    "BatchResult",
    "CategoricalNBExport",
    "CountRepair",
    "FrequencyResult",
    "HeavyHittersResult",
    "IBUStatus",
    "MeanResult",
    "NaiveBayesFeature",
    "NaiveBayesModel",
    "NaiveBayesPredictRequest",
    "NaiveBayesPrediction",
    "NaiveBayesPredictions",
    "NaiveBayesSmoothing",
    "NaiveBayesTrainRequest",
    "OrdinalEstimate",
    "OrdinalSummary",
    "Quantile",
    "QuantileResult",
    "Report",
    "ReportBatch",
    "ReportOutcome",
    "ReportStatus",
    "checked_range",
    "decode_bits",
    "encode_bits",
    "new_report_id",
]

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


class Report(RequestModel):
    """One perturbed record.

    The members' types are the request's shape (a batch with a report of another shape
    is refused whole); their values are judged report by report, each answering an
    outcome of its own (``id`` must match :data:`REPORT_ID_PATTERN`).
    """

    id: str = Field(description="client-chosen random id; retries reuse it")
    config_hash: str = Field(description="the collection's config hash")
    bits: str = Field(description="packed perturbed bits, canonical base64 with padding")


class ReportBatch(RequestModel):
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


class PeriodWindow(_Wire):
    """The periods an estimate rests on: ``first`` … ``last``, both included."""

    period: Literal["hour", "day", "week"]
    first: str = Field(description="the first period, ISO 8601 (2026-11-26, 2026-W48, …T13Z)")
    last: str = Field(description="the last period, ISO 8601")
    periods: int = Field(description="how many periods the window spans")


class _AttributeRelease(_Wire):
    """What every released estimate of one attribute states first."""

    collection: str
    attribute: str
    mechanism: str
    n_reports: int
    epsilon: float = Field(description="exact ε spent on this attribute per record")
    record_epsilon: float = Field(description="exact ε of a whole record")
    confidence: float
    window: PeriodWindow | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="the periods whose reports the estimate rests on (absent: all of them)",
    )
    central: CentralRelease | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "shuffled collections: the central (ε, δ) against the aggregator, given an"
            " honest shuffler, of the n_reports shuffled reports (absent when unshuffled)"
        ),
    )


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


class FrequencyResult(_AttributeRelease, Tabular):
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


class HeavyHittersResult(_AttributeRelease, Tabular):
    """The most frequent values of an open-domain attribute, found from its statistics."""

    values: list[str] = Field(description="the values found, most frequent first")
    estimate: list[float] = Field(description="unbiased frequencies (as /frequencies?values=)")
    counts: list[float] = Field(description="unbiased counts, n_reports · estimate")
    stderr: list[float]
    ci_low: list[float]
    ci_high: list[float]
    threshold: float = Field(
        description=(
            "detection threshold: a value at least this frequent is found with probability"
            " ≥ 1 − miss; below it nothing is found reliably (docs/open-domains.md)"
        )
    )
    false_discovery: float = Field(
        description=(
            "α: the chance that the list holds a value no device holds (exact binomial test"
            " of each string, corrected for collisions with the frequent keys found)"
        )
    )
    miss: float = Field(description="β: the chance that a value above the threshold is missed")
    levels_searched: int = Field(description="prefix levels the search went through")
    candidates: int = Field(description="prefixes and strings estimated on the way")


class MeanResult(_AttributeRelease, Tabular):
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


class QuantileResult(_AttributeRelease, Tabular):
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
