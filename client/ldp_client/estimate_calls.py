"""The analysis endpoints seen from the client, without I/O (shared by both clients):
frequencies (of named values too), heavy hitters, means, quantiles, trends and
differences of windows. Arguments the aggregator would refuse are refused here first, as
typed errors, before anything is sent.

A *window* is a pair ``(from, to)`` of period bounds, both included, each a
:class:`~datetime.date`, a :class:`~datetime.datetime` (UTC when naive), an ISO 8601
string (``"2026-11-26"``, ``"2026-W48"``, ``"2026-11-26T13:00Z"``) or ``None`` (open).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime

from ldp_client.protocol import ApiCall, PostProcess, collection_path
from ldp_shared import candidates
from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult
from ldp_shared.wire.trends import DifferenceResult, TrendResult

Bound = str | date | datetime | None
"""One end of a window (see the module docstring)."""

WindowBounds = tuple[Bound, Bound]
"""``(from, to)``: the periods an estimate rests on, both included."""


def _bound_text(bound: Bound, name: str) -> str | None:
    if bound is None or isinstance(bound, str):
        return bound
    if isinstance(bound, datetime):
        aware = bound if bound.tzinfo else bound.replace(tzinfo=UTC)
        return aware.astimezone(UTC).isoformat()
    if isinstance(bound, date):
        return bound.isoformat()
    raise InvalidQueryError(
        f"{name} must be a date, a datetime or an ISO 8601 string, got {bound!r}"
    )


def window_params(window: WindowBounds | None, prefix: str = "") -> dict[str, str]:
    """The query parameters of ``window`` (none for ``None``: every period)."""
    if window is None:
        return {}
    if isinstance(window, str | bytes) or not isinstance(window, tuple) or len(window) != 2:
        raise InvalidQueryError(f"a window is a pair (from, to), got {window!r}")
    params: dict[str, str] = {}
    for key, bound in zip(("from", "to"), window, strict=True):
        text = _bound_text(bound, f"{prefix}{key}")
        if text is not None:
            params[f"{prefix}{key}"] = text
    return params


def _estimate_params(
    attribute: str,
    confidence: float,
    window: WindowBounds | None = None,
    values: Sequence[str | int] | None = None,
) -> dict[str, str]:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise InvalidQueryError(f"confidence must be a number in (0, 1), got {confidence!r}")
    params = {"attribute": attribute, "confidence": repr(float(confidence))}
    params.update(window_params(window))
    if values is not None:
        params["values"] = candidates.query_text(values)
    return params


def frequencies_call(
    name: str,
    attribute: str,
    confidence: float,
    postprocess: PostProcess,
    values: Sequence[str | int] | None = None,
    window: WindowBounds | None = None,
) -> ApiCall[FrequencyResult]:
    """``GET /v1/collections/{name}/frequencies`` (analyst), of the named ``values`` only
    when given (:class:`InvalidQueryError` here for none or more than the server takes),
    over the periods of ``window`` when given."""
    params = _estimate_params(attribute, confidence, window, values)
    params["postprocess"] = postprocess
    return ApiCall(
        "GET",
        collection_path(name) + "/frequencies",
        FrequencyResult.model_validate_json,
        params=params,
        auth=True,
    )


def heavy_hitters_call(
    name: str, attribute: str, top: int, confidence: float, window: WindowBounds | None = None
) -> ApiCall[HeavyHittersResult]:
    """``GET /v1/collections/{name}/heavy-hitters`` (analyst): the ``top`` most frequent
    values of an open-domain (``pem``) attribute found in its statistics."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InvalidQueryError(f"k must be a whole number of at least 1, got {top!r}")
    params = _estimate_params(attribute, confidence, window)
    params["k"] = str(top)
    return ApiCall(
        "GET",
        collection_path(name) + "/heavy-hitters",
        HeavyHittersResult.model_validate_json,
        params=params,
        auth=True,
    )


def means_call(
    name: str, attribute: str, confidence: float, window: WindowBounds | None = None
) -> ApiCall[MeanResult]:
    """``GET /v1/collections/{name}/means`` (analyst): the mean of a numeric attribute."""
    return ApiCall(
        "GET",
        collection_path(name) + "/means",
        MeanResult.model_validate_json,
        params=_estimate_params(attribute, confidence, window),
        auth=True,
    )


def quantiles_call(
    name: str,
    attribute: str,
    levels: Sequence[float],
    confidence: float,
    window: WindowBounds | None = None,
) -> ApiCall[QuantileResult]:
    """``GET /v1/collections/{name}/quantiles`` (analyst): quantiles of a histogram
    attribute at ``levels`` (the aggregator checks that they lie in (0, 1))."""
    params = _estimate_params(attribute, confidence, window)
    if isinstance(levels, str | bytes) or not all(
        isinstance(q, int | float) and not isinstance(q, bool) for q in levels
    ):
        raise InvalidQueryError(f"quantile levels must be a sequence of numbers, got {levels!r}")
    params["q"] = ",".join(repr(float(q)) for q in levels)
    return ApiCall(
        "GET",
        collection_path(name) + "/quantiles",
        QuantileResult.model_validate_json,
        params=params,
        auth=True,
    )


TREND_ESTIMATES = ("frequencies", "mean", "quantiles")
"""What a trend or a difference can follow (``estimate=``; ``None``: as released)."""


def _trend_params(
    attribute: str,
    confidence: float,
    window: WindowBounds | None,
    values: Sequence[str | int] | None,
    estimate: str | None,
    levels: Sequence[float] | None,
) -> dict[str, str]:
    params = _estimate_params(attribute, confidence, window, values)
    if estimate is not None:
        if estimate not in TREND_ESTIMATES:
            raise InvalidQueryError(
                f"estimate must be one of {', '.join(TREND_ESTIMATES)} or None, got"
                f" {estimate!r} (a naive Bayes model or a kNN classifier has no trend: train"
                " one over a window)"
            )
        params["estimate"] = estimate
    if levels is not None:
        params["q"] = _levels_text(levels)
    return params


def _levels_text(levels: Sequence[float]) -> str:
    if isinstance(levels, str | bytes) or not all(
        isinstance(q, int | float) and not isinstance(q, bool) for q in levels
    ):
        raise InvalidQueryError(f"quantile levels must be a sequence of numbers, got {levels!r}")
    return ",".join(repr(float(q)) for q in levels)


def trend_call(
    name: str,
    attribute: str,
    window: WindowBounds | None,
    confidence: float,
    values: Sequence[str | int] | None = None,
    estimate: str | None = None,
    levels: Sequence[float] | None = None,
) -> ApiCall[TrendResult]:
    """``GET /v1/collections/{name}/trend`` (analyst): one estimate per period."""
    return ApiCall(
        "GET",
        collection_path(name) + "/trend",
        TrendResult.model_validate_json,
        params=_trend_params(attribute, confidence, window, values, estimate, levels),
        auth=True,
    )


def difference_call(
    name: str,
    attribute: str,
    window: WindowBounds,
    baseline: WindowBounds,
    confidence: float,
    values: Sequence[str | int] | None = None,
    estimate: str | None = None,
    levels: Sequence[float] | None = None,
) -> ApiCall[DifferenceResult]:
    """``GET /v1/collections/{name}/difference`` (analyst): ``window``'s estimate minus
    ``baseline``'s, with the interval of the difference."""
    params = _trend_params(attribute, confidence, window, values, estimate, levels)
    params.update(window_params(baseline, prefix="baseline_"))
    return ApiCall(
        "GET",
        collection_path(name) + "/difference",
        DifferenceResult.model_validate_json,
        params=params,
        auth=True,
    )
