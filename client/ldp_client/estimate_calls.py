"""The analysis endpoints seen from the client, without I/O (shared by both clients):
frequencies (of named values too), heavy hitters, means and quantiles. Arguments the
aggregator would refuse are refused here first, as typed errors, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from ldp_client.protocol import ApiCall, PostProcess, collection_path
from ldp_shared import candidates
from ldp_shared.errors import InvalidQueryError
from ldp_shared.wire import FrequencyResult, HeavyHittersResult, MeanResult, QuantileResult


def _estimate_params(attribute: str, confidence: float) -> dict[str, str]:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise InvalidQueryError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return {"attribute": attribute, "confidence": repr(float(confidence))}


def frequencies_call(
    name: str,
    attribute: str,
    confidence: float,
    postprocess: PostProcess,
    values: Sequence[str | int] | None = None,
) -> ApiCall[FrequencyResult]:
    """``GET /v1/collections/{name}/frequencies`` (analyst), of the named ``values`` only
    when given (:class:`InvalidQueryError` here for none or more than the server takes)."""
    params = _estimate_params(attribute, confidence)
    params["postprocess"] = postprocess
    if values is not None:
        params["values"] = candidates.query_text(values)
    return ApiCall(
        "GET",
        collection_path(name) + "/frequencies",
        FrequencyResult.model_validate_json,
        params=params,
        auth=True,
    )


def heavy_hitters_call(
    name: str, attribute: str, top: int, confidence: float
) -> ApiCall[HeavyHittersResult]:
    """``GET /v1/collections/{name}/heavy-hitters`` (analyst): the ``top`` most frequent
    values of an open-domain (``pem``) attribute found in its statistics."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InvalidQueryError(f"k must be a whole number of at least 1, got {top!r}")
    params = _estimate_params(attribute, confidence)
    params["k"] = str(top)
    return ApiCall(
        "GET",
        collection_path(name) + "/heavy-hitters",
        HeavyHittersResult.model_validate_json,
        params=params,
        auth=True,
    )


def means_call(name: str, attribute: str, confidence: float) -> ApiCall[MeanResult]:
    """``GET /v1/collections/{name}/means`` (analyst): the mean of a numeric attribute."""
    return ApiCall(
        "GET",
        collection_path(name) + "/means",
        MeanResult.model_validate_json,
        params=_estimate_params(attribute, confidence),
        auth=True,
    )


def quantiles_call(
    name: str, attribute: str, levels: Sequence[float], confidence: float
) -> ApiCall[QuantileResult]:
    """``GET /v1/collections/{name}/quantiles`` (analyst): quantiles of a histogram
    attribute at ``levels`` (the aggregator checks that they lie in (0, 1))."""
    params = _estimate_params(attribute, confidence)
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


# --------------------------------------------------------------------- interpreting
