"""Heavy hitters of an open-domain attribute (``pem``), found from its statistics alone.

The search (:mod:`ldp_shared.analyses.heavy_hitters`) proposes the strings; their
released estimates are then those of ``GET .../frequencies?values=`` for the same strings
(the same estimator, the sampling variance added under budget ``sample``).
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
from ldp_shared.analyses.heavy_hitters import find_heavy_hitters
from ldp_shared.analyses.joint import attribute_estimate, attribute_stats
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.mechanisms.hitter_threshold import FALSE_DISCOVERY, MISS
from ldp_shared.mechanisms.prefix_hashing import PrefixHashing, PrefixHashingSpec
from ldp_shared.periods import Window
from ldp_shared.wire.releases import HeavyHittersResult

MAX_TOP = 1000
"""Most values one heavy-hitters query may ask for."""


def _discovering(config: CollectionConfig, attribute: str) -> AttributeConfig:
    attr = released_attribute(config, attribute, "frequencies")
    if not isinstance(config.spec_of(attr), PrefixHashingSpec):
        raise InvalidQueryError(
            f"attribute {attribute!r} ({attr.mechanism}) keeps no prefixes, so its values"
            " cannot be discovered: ask its frequencies (values= for an open domain), or"
            " collect with mechanism 'pem'"
        )
    return attr


def check_heavy_hitters_query(
    config: CollectionConfig, attribute: str, top: int, confidence: float
) -> AttributeConfig:
    """The attribute, if it can be searched; :class:`InvalidQueryError` otherwise."""
    attr = _discovering(config, attribute)
    if not 1 <= top <= MAX_TOP:
        raise InvalidQueryError(f"k must be a whole number from 1 to {MAX_TOP}, got {top}")
    check_confidence(confidence)
    return attr


def heavy_hitters_result(
    config: CollectionConfig, stats: Stats, attribute: str, top: int, confidence: float = 0.95
) -> HeavyHittersResult:
    """The at most ``top`` most frequent values of ``attribute`` found in ``stats``."""
    attr = check_heavy_hitters_query(config, attribute, top, confidence)
    n = require_reports(config, stats)
    carried = carried_reports(config, attr, stats)
    spec = config.spec_of(attr)
    assert isinstance(spec, PrefixHashingSpec)
    randomizer = config.randomizer(attr)
    assert isinstance(randomizer, PrefixHashing)
    own = attribute_stats(config, attr, stats.sums, stats.floats)
    found = find_heavy_hitters(randomizer, spec.salt, own, top, confidence)
    if found.values:
        estimate = attribute_estimate(
            config, attr, n, stats.sums, confidence, stats.floats, spec.encode(found.values)
        )
    else:
        estimate = found.estimate
    return HeavyHittersResult(
        **release_header(config, attr, n, confidence),
        values=found.values,
        estimate=estimate.estimate.tolist(),
        counts=estimate.counts.tolist(),
        stderr=estimate.stderr.tolist(),
        ci_low=estimate.ci_low.tolist(),
        ci_high=estimate.ci_high.tolist(),
        threshold=found.threshold,
        false_discovery=FALSE_DISCOVERY,
        miss=MISS,
        attribute_reports=carried,
        levels_searched=found.levels_searched,
        candidates=found.candidates,
    )


def estimate_heavy_hitters(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    top: int,
    confidence: float = 0.95,
    window: Window | None = None,
) -> HeavyHittersResult:
    """Read the collection's statistics (of the periods of ``window``, if given) and
    search them for ``attribute``'s heavy hitters."""
    check_heavy_hitters_query(collection.config, attribute, top, confidence)
    stats = current_stats(engine, collection, window)
    result = heavy_hitters_result(collection.config, stats, attribute, top, confidence)
    return windowed(result, window)
