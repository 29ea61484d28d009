"""Quantiles of a histogram attribute from the sufficient statistics alone (O(B²) in the
number of bins, never the reports).

The bins' unbiased frequencies and their covariance come from the attribute's channel
(:func:`ldp_shared.analyses.joint.attribute_covariance`); each quantile is interpolated
within its bin and its interval inverts the CDF's pointwise band
(:mod:`ldp_shared.analyses.quantiles`). Every rule of a frequency release applies: the
release minimum of all reports and, under the ``sample`` budget, of those that carried
the attribute.
"""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import Engine

from ldp_aggregator.release import (
    carried_reports,
    check_confidence,
    current_stats,
    release_header,
    released_attribute,
    require_reports,
    windowed,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats
from ldp_shared.analyses.joint import attribute_covariance
from ldp_shared.analyses.quantiles import binned_quantiles, check_probabilities
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.periods import Window
from ldp_shared.wire.releases import Quantile, QuantileResult

DEFAULT_LEVELS = "0.25,0.5,0.75"
"""The levels released when a query names none (the quartiles)."""


def parse_levels(text: str) -> FloatArray:
    """``"0.25,0.5,0.9"`` → the levels, each a finite number in (0, 1)."""
    try:
        levels = [float(part) for part in text.split(",")]
    except ValueError:
        raise InvalidQueryError(
            f"q must be comma-separated numbers in (0, 1), e.g. 0.25,0.5,0.9; got {text!r}"
        ) from None
    return check_probabilities(levels)


def check_quantile_query(
    config: CollectionConfig, attribute: str, levels: str, confidence: float
) -> tuple[AttributeConfig, list[float], FloatArray]:
    """The histogram attribute, its edges and the levels; :class:`InvalidQueryError` for
    anything else (unknown or non-histogram attribute, bad levels or confidence)."""
    attr = released_attribute(config, attribute, "frequencies")
    edges = config.spec_of(attr).bin_edges
    if edges is None:
        raise InvalidQueryError(
            f"attribute {attribute!r} ({attr.mechanism}) has no bins of a number: quantiles"
            " need a 'histogram' attribute; ask its frequencies instead"
        )
    check_confidence(confidence)
    return attr, edges, parse_levels(levels)


def quantile_result(
    config: CollectionConfig,
    stats: Stats,
    attribute: str,
    levels: str = DEFAULT_LEVELS,
    confidence: float = 0.95,
) -> QuantileResult:
    """The released quantiles of histogram ``attribute`` at the comma-separated ``levels``.

    :class:`InvalidQueryError` for a bad query (see :func:`check_quantile_query`),
    :class:`~ldp_shared.errors.InsufficientReportsError` below the release minimum (or
    when the estimated frequencies are too noisy to sum to a positive total).
    """
    attr, edges, qs = check_quantile_query(config, attribute, levels, confidence)
    n = require_reports(config, stats)
    carried = carried_reports(config, attr, stats)
    moments = attribute_covariance(config, attr, n, stats.sums, stats.floats)
    if moments is None:  # pragma: no cover - every histogram channel states its covariance
        raise InvalidQueryError(f"attribute {attribute!r}: its channel states no covariance")
    return QuantileResult(
        **release_header(config, attr, n, confidence),
        edges=edges,
        quantiles=[
            Quantile(**asdict(found)) for found in binned_quantiles(edges, *moments, qs, confidence)
        ],
        attribute_reports=carried,
    )


def estimate_quantiles(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    levels: str = DEFAULT_LEVELS,
    confidence: float = 0.95,
    window: Window | None = None,
) -> QuantileResult:
    """Read the collection's statistics (of the periods of ``window``, if given) and
    release the quantiles of ``attribute``."""
    check_quantile_query(collection.config, attribute, levels, confidence)
    stats = current_stats(engine, collection, window)
    result = quantile_result(collection.config, stats, attribute, levels, confidence)
    return windowed(result, window)
