"""Means of numeric attributes from the sufficient statistics alone (O(1), never the reports).

Each numeric mechanism estimates the mean of its attribute's (clipped) values, with the
standard error of its own variance formula (:meth:`~ldp_shared.mechanisms.base.Randomizer.
estimate_stats`); under the ``sample`` budget from the ``n_j`` reports that carried the
attribute, with the sampling variance added (bounded by ``(hi − m)(m − lo)``). Where the
mechanism's answers carry a second moment (the lattice mechanisms,
:class:`~ldp_shared.mechanisms.lattice.MeanEstimate`), the estimated variance of the
values is released too.
"""

from __future__ import annotations

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
from ldp_shared.analyses.joint import attribute_estimate, attribute_stats
from ldp_shared.collection import CollectionConfig
from ldp_shared.mechanisms.lattice import MeanEstimate
from ldp_shared.periods import Window
from ldp_shared.wire.releases import MeanResult


def mean_result(
    config: CollectionConfig, stats: Stats, attribute: str, confidence: float = 0.95
) -> MeanResult:
    """The released mean of numeric ``attribute``.

    :class:`~ldp_shared.errors.InvalidQueryError` for an unknown or non-numeric attribute
    or a confidence outside (0, 1); :class:`~ldp_shared.errors.InsufficientReportsError`
    below the release minimum.
    """
    attr = released_attribute(config, attribute, "mean")
    check_confidence(confidence)
    n = require_reports(config, stats)
    carried = carried_reports(config, attr, stats)
    estimate = attribute_estimate(config, attr, n, stats.sums, confidence, stats.floats)
    spec = config.spec_of(attr)
    own = estimate
    if carried is not None:  # the sampled estimate is rebuilt: ask the mechanism's own
        stats_j = attribute_stats(config, attr, stats.sums, stats.floats)
        own = config.randomizer(attr).estimate_stats(stats_j, carried, confidence)
    spread = own.value_variance if isinstance(own, MeanEstimate) else None
    return MeanResult(
        **release_header(config, attr, n, confidence),
        delta=config.privacy.attribute(attr.name).delta,
        lo=float(getattr(spec, "lo")),  # noqa: B009  (every mean-released spec has bounds)
        hi=float(getattr(spec, "hi")),  # noqa: B009
        mean=float(estimate.estimate[0]),
        stderr=float(estimate.stderr[0]),
        ci_low=float(estimate.ci_low[0]),
        ci_high=float(estimate.ci_high[0]),
        attribute_reports=carried,
        variance=None if spread is None else float(spread[0]),
    )


def estimate_mean(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    confidence: float = 0.95,
    window: Window | None = None,
) -> MeanResult:
    """Read the collection's statistics (of the periods of ``window``, if given) and
    release the mean of ``attribute``."""
    released_attribute(collection.config, attribute, "mean")
    check_confidence(confidence)
    stats = current_stats(engine, collection, window)
    return windowed(mean_result(collection.config, stats, attribute, confidence), window)
