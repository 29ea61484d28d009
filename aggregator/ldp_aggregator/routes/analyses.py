"""Analyses of a collection (analyst): frequencies of categorical attributes, means of
numeric ones, quantiles of histograms; each as JSON, or as CSV with ``?format=csv`` or
``Accept: text/csv`` (:mod:`ldp_aggregator.result_downloads`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from ldp_aggregator.auth import require_analyst
from ldp_aggregator.deps import app_state
from ldp_aggregator.frequencies import estimate_frequencies
from ldp_aggregator.heavy_hitters import MAX_TOP, estimate_heavy_hitters
from ldp_aggregator.means import estimate_mean
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.quantiles import DEFAULT_LEVELS, estimate_quantiles
from ldp_aggregator.release import window_query
from ldp_aggregator.result_downloads import CSV_RESPONSE, FormatParam, answer, filename
from ldp_aggregator.routes.window_params import WindowFrom, WindowTo
from ldp_shared.wire.base import checked_range
from ldp_shared.wire.releases import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult

router = APIRouter(prefix="/v1/collections", tags=["analyses"])

ConfidenceLevel = Annotated[
    float,
    Query(
        description="confidence level of the intervals, in (0, 1)",
        json_schema_extra=checked_range(gt=0, lt=1),
    ),
]
"""The ``confidence`` query parameter (checked by the estimators: 422 ``invalid-query``)."""


@router.get(
    "/{name}/frequencies",
    response_model=FrequencyResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def frequencies(
    name: str,
    request: Request,
    attribute: Annotated[str, Query(min_length=1, description="the attribute to estimate")],
    confidence: ConfidenceLevel = 0.95,
    postprocess: Annotated[
        str,
        Query(
            description=(
                "none, norm-sub, simplex or ibu (iterative Bayesian update); the raw estimate"
                " is always included"
            )
        ),
    ] = "none",
    values: Annotated[
        str | None,
        Query(
            description=(
                "estimate only these values, comma-separated (a comma or backslash inside a"
                " value is escaped with a backslash, which escapes nothing else); required"
                " for an open domain (flh, hcms, pem, hadamard with domain_size), at most 1000"
            ),
            max_length=1_000_000,
        ),
    ] = None,
    first: WindowFrom = None,
    last: WindowTo = None,
    fmt: FormatParam = None,
) -> FrequencyResult | Response:
    """Unbiased frequencies with standard errors and confidence intervals, in O(d) (or
    O(k) per named value for a hashed mechanism), over all reports or those of the
    periods ``from`` … ``to``."""
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    result = estimate_frequencies(
        state.engine, collection, attribute, confidence, postprocess, values, window
    )
    return answer(request, fmt, result, filename(name, attribute, "frequencies"))


@router.get(
    "/{name}/heavy-hitters",
    response_model=HeavyHittersResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def heavy_hitters(
    name: str,
    request: Request,
    attribute: Annotated[
        str, Query(min_length=1, description="the open-domain attribute (mechanism pem)")
    ],
    k: Annotated[
        int,
        Query(
            description=f"how many of the most frequent values to return, 1 to {MAX_TOP}",
            json_schema_extra=checked_range(ge=1, le=MAX_TOP),
        ),
    ] = 20,
    confidence: ConfidenceLevel = 0.95,
    first: WindowFrom = None,
    last: WindowTo = None,
    fmt: FormatParam = None,
) -> HeavyHittersResult | Response:
    """The most frequent values nobody listed, each with its estimate, standard error and
    interval, and the detection threshold below which nothing is found reliably."""
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    result = estimate_heavy_hitters(state.engine, collection, attribute, k, confidence, window)
    return answer(request, fmt, result, filename(name, attribute, "heavy-hitters"))


@router.get(
    "/{name}/means",
    response_model=MeanResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def means(
    name: str,
    request: Request,
    attribute: Annotated[str, Query(min_length=1, description="the numeric attribute to estimate")],
    confidence: ConfidenceLevel = 0.95,
    first: WindowFrom = None,
    last: WindowTo = None,
    fmt: FormatParam = None,
) -> MeanResult | Response:
    """The unbiased mean of a numeric attribute with its standard error and interval, in O(1)."""
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    result = estimate_mean(state.engine, collection, attribute, confidence, window)
    return answer(request, fmt, result, filename(name, attribute, "mean"))


@router.get(
    "/{name}/quantiles",
    response_model=QuantileResult,
    dependencies=[Depends(require_analyst)],
    responses={**problem_responses(401, 404, 409), **CSV_RESPONSE},
)
def quantiles(
    name: str,
    request: Request,
    attribute: Annotated[str, Query(min_length=1, description="the histogram attribute")],
    q: Annotated[
        str, Query(description="comma-separated levels in (0, 1), e.g. 0.25,0.5,0.9")
    ] = DEFAULT_LEVELS,
    confidence: ConfidenceLevel = 0.95,
    first: WindowFrom = None,
    last: WindowTo = None,
    fmt: FormatParam = None,
) -> QuantileResult | Response:
    """Quantiles of a histogram attribute, interpolated within their bins, with intervals
    from the inverted pointwise band of the estimated CDF."""
    state = app_state(request)
    collection = state.collections.get(name)
    window = window_query(collection, first, last)
    result = estimate_quantiles(state.engine, collection, attribute, q, confidence, window)
    return answer(request, fmt, result, filename(name, attribute, "quantiles"))
