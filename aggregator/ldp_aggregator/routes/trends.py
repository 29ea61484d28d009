"""Estimates over time (analyst): a trend, one estimate per period, and the difference
between two windows; JSON, or CSV with ``?format=csv`` or ``Accept: text/csv``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.result_downloads import (
    CSV_RESPONSE,
    FormatParam,
    answer,
    filename,
)
from ldp_aggregator.routes.analyses import ConfidenceLevel
from ldp_aggregator.routes.window_params import WindowFrom, WindowTo
from ldp_aggregator.trends import difference_result, trend_result
from ldp_shared.wire.trends import DifferenceResult, TrendResult

router = APIRouter(prefix="/v1/collections", tags=["analyses"])

Attribute = Annotated[str, Query(min_length=1, description="the attribute to follow")]
Values = Annotated[
    str | None,
    Query(
        description="an open domain's values to estimate, comma-separated (as /frequencies)",
        max_length=1_000_000,
    ),
]
EstimateParam = Annotated[
    Literal["frequencies", "mean", "quantiles", "naive-bayes", "knn"] | None,
    Query(
        description=(
            "what to follow: frequencies, mean or quantiles (histogram attributes); default"
            " how the attribute is released (quantiles when q is given). naive-bayes and knn"
            " are refused (422): a model has no trend, train one over a window instead"
        )
    ),
]
Levels = Annotated[
    str | None,
    Query(
        max_length=2_000,
        description="quantile levels in (0, 1), comma-separated (default 0.5, the median)",
    ),
]


@router.get(
    "/{name}/trend",
    response_model=TrendResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404), **CSV_RESPONSE},
)
def trend(
    name: str,
    request: Request,
    attribute: Attribute,
    first: WindowFrom = None,
    last: WindowTo = None,
    confidence: ConfidenceLevel = 0.95,
    values: Values = None,
    estimate: EstimateParam = None,
    q: Levels = None,
    fmt: FormatParam = None,
) -> TrendResult | Response:
    """One estimate per period of the window (frequencies, the mean of a numeric
    attribute, or a histogram attribute's quantiles), each with its intervals; a period
    below the release minimum is listed with its count and withheld."""
    state = app_state(request)
    collection = state.collections.get(name)
    result = trend_result(
        state.engine, collection, attribute, first, last, confidence, values, estimate, q
    )
    return answer(request, fmt, result, filename(name, attribute, "trend"))


@router.get(
    "/{name}/difference",
    response_model=DifferenceResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def difference(
    name: str,
    request: Request,
    attribute: Attribute,
    first: WindowFrom = None,
    last: WindowTo = None,
    baseline_from: Annotated[
        str | None, Query(max_length=64, description="first period of the baseline window")
    ] = None,
    baseline_to: Annotated[
        str | None, Query(max_length=64, description="last period of the baseline window")
    ] = None,
    confidence: ConfidenceLevel = 0.95,
    values: Values = None,
    estimate: EstimateParam = None,
    q: Levels = None,
    fmt: FormatParam = None,
) -> DifferenceResult | Response:
    """The estimate over ``from`` … ``to`` minus the estimate over the disjoint baseline
    window, value by value (quantiles: level by level), with the interval of the
    difference."""
    state = app_state(request)
    collection = state.collections.get(name)
    result = difference_result(
        state.engine,
        collection,
        attribute,
        (first, last),
        (baseline_from, baseline_to),
        confidence,
        values,
        estimate,
        q,
    )
    return answer(request, fmt, result, filename(name, attribute, "difference"))
