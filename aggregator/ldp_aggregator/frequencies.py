"""Frequency estimation from the sufficient statistics alone (O(d), never the reports)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine

from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats, read_stats
from ldp_shared.collection import CollectionConfig, mechanisms_of
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.kernel import z_value
from ldp_shared.postprocess import POSTPROCESS_METHODS, PostProcess, postprocess
from ldp_shared.wire import FrequencyResult


def check_frequency_query(
    config: CollectionConfig, attribute: str, confidence: float, method: str
) -> tuple[int, PostProcess]:
    """Validate a query; returns the attribute's position and the post-processing method."""
    names = [a.name for a in config.attributes]
    if attribute not in names:
        raise InvalidQueryError(
            f"collection {config.name!r} has no attribute {attribute!r}; "
            f"its attributes are {', '.join(names)}"
        )
    z_value(confidence)  # raises InvalidQueryError outside (0, 1)
    if method not in POSTPROCESS_METHODS:
        raise InvalidQueryError(
            f"unknown post-processing {method!r}; choose one of {', '.join(POSTPROCESS_METHODS)}"
        )
    known: PostProcess = method
    index = names.index(attribute)
    if known != "none" and config.attributes[index].mechanism == "mask":
        raise InvalidQueryError(
            f"attribute {attribute!r} is a basket (MASK): its item supports need not sum "
            "to 1, so post-processing onto the simplex does not apply; use postprocess=none"
        )
    return index, known


def frequency_result(
    config: CollectionConfig,
    stats: Stats,
    attribute: str,
    confidence: float = 0.95,
    method: str = "none",
) -> FrequencyResult:
    """The released frequencies of one attribute, from ``n`` and the per-value sums.

    Raises :class:`InvalidQueryError` for an unknown attribute, a confidence outside
    (0, 1) or an unknown post-processing, and :class:`InsufficientReportsError` below
    the collection's ``release.min_reports``.
    """
    index, known = check_frequency_query(config, attribute, confidence, method)
    minimum = config.spec.release.min_reports
    if stats.n_reports < minimum:
        raise InsufficientReportsError(
            f"collection {config.name!r} has {stats.n_reports} reports; "
            f"its release policy needs at least {minimum}"
        )
    attr = config.attributes[index]
    sums: NDArray[np.int64] = stats.sums[attr.stats_offset : attr.stats_offset + attr.d]
    estimate = mechanisms_of(config)[index].estimate(sums, stats.n_reports, confidence)
    repaired = None if known == "none" else postprocess(estimate.estimate, known).tolist()
    return FrequencyResult(
        collection=config.name,
        attribute=attr.name,
        mechanism=attr.mechanism,
        n_reports=stats.n_reports,
        epsilon=attr.epsilon,
        record_epsilon=config.epsilon,
        confidence=confidence,
        postprocess=known,
        values=list(attr.domain),
        estimate=estimate.estimate.tolist(),
        counts=estimate.counts.tolist(),
        stderr=estimate.stderr.tolist(),
        ci_low=estimate.ci_low.tolist(),
        ci_high=estimate.ci_high.tolist(),
        postprocessed=repaired,
    )


def estimate_frequencies(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    confidence: float = 0.95,
    method: str = "none",
) -> FrequencyResult:
    """Read the collection's statistics and release the frequencies of ``attribute``."""
    config = collection.config
    check_frequency_query(config, attribute, confidence, method)
    with engine.connect() as connection:
        stats = read_stats(connection, collection.id, config.stats_length)
    return frequency_result(config, stats, attribute, confidence, method)
