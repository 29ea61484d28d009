"""Frequency estimation from the sufficient statistics alone (O(d), never the reports).

In a label collection (naive Bayes) a feature's frequencies are the sums over the classes
of its joint estimates, and the label's are combined over the features
(:mod:`ldp_shared.analyses.joint`, with their variances); under the ``sample`` budget each
attribute is estimated from the reports that carried it, with the sampling variance added.
"""

from __future__ import annotations

from sqlalchemy import Engine

from ldp_aggregator.release import (
    carried_reports,
    check_confidence,
    current_stats,
    released_attribute,
    require_reports,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats
from ldp_shared.analyses.joint import attribute_estimate, feature_marginal, label_estimate
from ldp_shared.analyses.postprocess import POSTPROCESS_METHODS, PostProcess, postprocess
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidQueryError
from ldp_shared.kernel import FrequencyEstimate
from ldp_shared.wire import FrequencyResult


def check_frequency_query(
    config: CollectionConfig, attribute: str, confidence: float, method: str
) -> tuple[int | None, PostProcess]:
    """Validate a query; returns the attribute's position (``None`` for the label) and the
    post-processing method."""
    label = None if config.label is None else config.label.name
    attr = None if attribute == label else released_attribute(config, attribute, "frequencies")
    check_confidence(confidence)
    if method not in POSTPROCESS_METHODS:
        raise InvalidQueryError(
            f"unknown post-processing {method!r}; choose one of {', '.join(POSTPROCESS_METHODS)}"
        )
    known_method: PostProcess = method
    if attr is None:
        return None, known_method
    if known_method != "none" and not config.spec_of(attr).is_distribution:
        raise InvalidQueryError(
            f"attribute {attribute!r} is a basket (MASK): its item supports need not sum "
            "to 1, so post-processing onto the simplex does not apply; use postprocess=none"
        )
    return config.attributes.index(attr), known_method


def _label_mechanism(config: CollectionConfig) -> str:
    mechanisms = sorted({a.mechanism for a in config.features})
    return "joint " + "+".join(mechanisms)


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
    the collection's ``release.min_reports``: of all reports, and under the ``sample``
    budget also of the ``n_j`` reports that carried the attribute (the label's estimate
    rests on every report).
    """
    index, known = check_frequency_query(config, attribute, confidence, method)
    n = require_reports(config, stats)
    carried: int | None = None
    estimate: FrequencyEstimate
    epsilon = config.privacy.attribute(attribute).epsilon
    if index is None:
        assert config.label is not None
        estimate = label_estimate(config, n, stats.sums, confidence)
        name, mechanism, values = config.label.name, _label_mechanism(config), config.label.domain
    else:
        attr = config.attributes[index]
        name, mechanism, values = attr.name, attr.mechanism, attr.values
        carried = carried_reports(config, attr, stats)
        if attr.is_feature:
            estimate = feature_marginal(attr, n, stats.sums, confidence)
        else:
            estimate = attribute_estimate(config, attr, n, stats.sums, confidence, stats.floats)
    repaired = None if known == "none" else postprocess(estimate.estimate, known).tolist()
    return FrequencyResult(
        collection=config.name,
        attribute=name,
        mechanism=mechanism,
        n_reports=n,
        epsilon=epsilon,
        record_epsilon=config.epsilon,
        confidence=confidence,
        postprocess=known,
        values=list(values),
        estimate=estimate.estimate.tolist(),
        counts=estimate.counts.tolist(),
        stderr=estimate.stderr.tolist(),
        ci_low=estimate.ci_low.tolist(),
        ci_high=estimate.ci_high.tolist(),
        postprocessed=repaired,
        attribute_reports=carried,
    )


def estimate_frequencies(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    confidence: float = 0.95,
    method: str = "none",
) -> FrequencyResult:
    """Read the collection's statistics and release the frequencies of ``attribute``."""
    check_frequency_query(collection.config, attribute, confidence, method)
    stats = current_stats(engine, collection)
    return frequency_result(collection.config, stats, attribute, confidence, method)
