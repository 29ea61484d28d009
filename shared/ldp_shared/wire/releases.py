"""Released estimates of one attribute: frequencies, heavy hitters, means, quantiles.

Each states first what it rests on (collection, attribute, mechanism, reports, exact ε,
the period window and, for a shuffled collection, the central guarantee).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ldp_shared.central import CentralRelease
from ldp_shared.tabular import INTERVAL, Columns, Tabular, from_rows
from ldp_shared.wire.base import WireModel, central_field

__all__ = [
    "FrequencyResult",
    "HeavyHittersResult",
    "IBUStatus",
    "MeanResult",
    "OrdinalEstimate",
    "OrdinalSummary",
    "PeriodWindow",
    "Quantile",
    "QuantileResult",
]


class PeriodWindow(WireModel):
    """The periods an estimate rests on: ``first`` … ``last``, both included."""

    period: Literal["hour", "day", "week"]
    first: str = Field(description="the first period, ISO 8601 (2026-11-26, 2026-W48, …T13Z)")
    last: str = Field(description="the last period, ISO 8601")
    periods: int = Field(description="how many periods the window spans")


class _AttributeRelease(WireModel):
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
    central: CentralRelease | None = central_field()


class IBUStatus(WireModel):
    """How the iterative Bayesian update of ``postprocess=ibu`` ended."""

    iterations: int = Field(description="EM updates computed (at most 10,000)")
    converged: bool = Field(description="whether the last update moved the estimate ≤ tolerance")
    change: float = Field(description="L1 distance moved by the last update")
    tolerance: float


def _carried_reports() -> Any:
    """The field ``attribute_reports`` of a release (absent unless the budget is sample)."""
    return Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "budget 'sample': how many of the n_reports carried this attribute (absent when"
            " every report carries it)"
        ),
    )


class OrdinalEstimate(WireModel):
    """A scalar of an ordered attribute (a rank), with its standard error and interval."""

    value: float
    stderr: float
    ci_low: float
    ci_high: float


class OrdinalSummary(WireModel):
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
    attribute_reports: int | None = _carried_reports()
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

    def frame_columns(self) -> Columns:
        """One row per value (:func:`_per_value`), with ``postprocessed`` when asked for
        and ``cdf``, ``cdf_stderr``, ``cdf_ci_low``, ``cdf_ci_high`` for ordered values."""
        table = _per_value(self)
        if self.postprocessed is not None:
            table["postprocessed"] = list(self.postprocessed)
        if self.ordinal is not None:
            ordinal = self.ordinal
            table["cdf"] = list(ordinal.cdf)
            table["cdf_stderr"] = list(ordinal.cdf_stderr)
            table["cdf_ci_low"] = list(ordinal.cdf_ci_low)
            table["cdf_ci_high"] = list(ordinal.cdf_ci_high)
        return table


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
    attribute_reports: int | None = _carried_reports()
    levels_searched: int = Field(description="prefix levels the search went through")
    candidates: int = Field(description="prefixes and strings estimated on the way")

    def frame_columns(self) -> Columns:
        """One row per value found (:func:`_per_value`)."""
        return _per_value(self)


def _per_value(result: FrequencyResult | HeavyHittersResult) -> Columns:
    """One row per value: ``value, estimate, count, stderr, ci_low, ci_high``."""
    return {
        "value": list(result.values),
        "estimate": list(result.estimate),
        "count": list(result.counts),
        "stderr": list(result.stderr),
        "ci_low": list(result.ci_low),
        "ci_high": list(result.ci_high),
    }


class MeanResult(_AttributeRelease, Tabular):
    """The mean of one numeric attribute, as released to an analyst."""

    lo: float = Field(description="the attribute's lower bound (values below were clipped)")
    hi: float = Field(description="the attribute's upper bound (values above were clipped)")
    mean: float = Field(description="unbiased mean of the clipped true values")
    stderr: float
    ci_low: float
    ci_high: float
    attribute_reports: int | None = _carried_reports()
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

    def frame_columns(self) -> Columns:
        """One row, ``value`` ``"mean"``: ``estimate, stderr, ci_low, ci_high``, then
        ``variance`` where the mechanism estimates one."""
        row = {"value": "mean", "estimate": self.mean}
        row.update({name: getattr(self, name) for name in INTERVAL})
        names = ["value", "estimate", *INTERVAL]
        if self.variance is not None:
            row["variance"] = self.variance
            names.append("variance")
        return from_rows([row], names)


class Quantile(WireModel):
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
    attribute_reports: int | None = _carried_reports()

    def frame_columns(self) -> Columns:
        """One row per level: ``probability, value, ci_low, ci_high, bin``."""
        names = ("probability", "value", "ci_low", "ci_high", "bin")
        return from_rows((quantile.model_dump() for quantile in self.quantiles), names)
