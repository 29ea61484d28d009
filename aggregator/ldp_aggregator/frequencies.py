"""Frequency estimation from the sufficient statistics alone (O(d), never the reports).

In a label collection (naive Bayes) a feature's frequencies are the sums over the classes
of its joint estimates, and the label's are combined over the features
(:mod:`ldp_shared.analyses.joint`, with their variances); under the ``sample`` budget each
attribute is estimated from the reports that carried it, with the sampling variance added.

``postprocess=ibu`` adds the iterative Bayesian update over the attribute's channel
(:mod:`ldp_shared.analyses.ibu`, plain EM updates) beside the raw estimate; an
attribute with ordered values also gets its CDF, mean rank and median
(:mod:`ldp_shared.analyses.ordinal`).

``values=x,y,z`` estimates only the values named (:mod:`ldp_shared.candidates`); an
attribute with an open domain (``flh``) has no list of values and is estimated only so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Engine

from ldp_aggregator.release import (
    carried_reports,
    central_of,
    check_confidence,
    current_stats,
    released_attribute,
    require_reports,
    windowed,
)
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.stats import Stats
from ldp_shared import candidates
from ldp_shared.analyses.ibu import DEFAULT_TOLERANCE, Functional, IBUResult, bayesian_update
from ldp_shared.analyses.joint import (
    attribute_channel,
    attribute_covariance,
    attribute_estimate,
    feature_marginal,
    label_estimate,
)
from ldp_shared.analyses.ordinal import ordinal_summary
from ldp_shared.analyses.postprocess import POSTPROCESS_METHODS, PostProcess, postprocess
from ldp_shared.codec import domain_indices
from ldp_shared.collection import AttributeConfig, CollectionConfig
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError, InvalidRecordError
from ldp_shared.kernel import FrequencyEstimate, z_value
from ldp_shared.periods import Window
from ldp_shared.wire.releases import FrequencyResult, IBUStatus, OrdinalEstimate, OrdinalSummary

Method = PostProcess | Literal["ibu"]
METHODS: tuple[Method, ...] = (*POSTPROCESS_METHODS, "ibu")


def check_frequency_query(
    config: CollectionConfig,
    attribute: str,
    confidence: float,
    method: str,
    values: str | None = None,
) -> tuple[int | None, Method]:
    """Validate a query; returns the attribute's position (``None`` for the label) and the
    post-processing method."""
    label = None if config.label is None else config.label.name
    attr = None if attribute == label else released_attribute(config, attribute, "frequencies")
    check_confidence(confidence)
    if method not in METHODS:
        raise InvalidQueryError(
            f"unknown post-processing {method!r}; choose one of {', '.join(METHODS)}"
        )
    known_method: Method = method
    if values is not None and known_method != "none":
        raise InvalidQueryError(
            f"postprocess={known_method} works on the whole distribution; leave out values="
            " or ask postprocess=none"
        )
    if values is None and attr is not None and config.spec_of(attr).is_open:
        raise InvalidQueryError(
            f"attribute {attribute!r} has an open domain: no list of its values exists, so"
            " name the values to estimate (values=x,y,z, at most"
            f" {candidates.MAX_CANDIDATES})"
        )
    if attr is None:
        if known_method == "ibu":
            raise InvalidQueryError(
                f"{attribute!r} is the label: its frequencies combine the reports of every"
                " feature, so no single channel describes them and IBU does not apply; use"
                " postprocess=norm-sub or simplex"
            )
        return None, known_method
    if known_method != "none" and not config.spec_of(attr).is_distribution:
        raise InvalidQueryError(
            f"attribute {attribute!r} is a basket (MASK): its item supports need not sum "
            "to 1, so post-processing onto the simplex does not apply; use postprocess=none"
        )
    return config.attributes.index(attr), known_method


@dataclass(frozen=True)
class NamedValues:
    """The values a query names: their names, and either their positions among the
    attribute's listed values (``direct`` false: taken from the full estimate) or, for an
    open domain or a mechanism that estimates each value alone, their encoding by its spec
    (``direct``: estimated one by one)."""

    names: list[str]
    encoded: NDArray[Any]
    direct: bool


def named_values(config: CollectionConfig, index: int | None, text: str) -> NamedValues:
    """The values a query names (``values=``); :class:`InvalidQueryError` for a value the
    attribute cannot take, or two names of one value."""
    names = candidates.split(text)
    listed = config.label.domain if index is None and config.label is not None else None
    try:
        if index is not None:
            attr = config.attributes[index]
            spec = config.spec_of(attr)
            if spec.is_open or spec.estimates_each_value:
                encoded = spec.encode([spec.parse_candidate(name) for name in names])
                _refuse_repeats(names, encoded)
                return NamedValues(names, encoded, direct=True)
            listed = attr.values
        assert listed is not None
        error = f"{_subject(config, index)} has no value {{bad}}"
        return NamedValues(names, domain_indices(listed, names, error), direct=False)
    except InvalidRecordError as error:
        raise InvalidQueryError(f"values: {error.detail}") from None


def _subject(config: CollectionConfig, index: int | None) -> str:
    """``attribute 'x'`` or ``the label 'y'``, for a message."""
    if index is None:
        assert config.label is not None
        return f"the label {config.label.name!r}"
    return f"attribute {config.attributes[index].name!r}"


def _refuse_repeats(names: list[str], encoded: NDArray[Any]) -> None:
    """Two names of one value (``7`` and ``07``, é in NFC and NFD) are refused."""
    rows = encoded.reshape(len(names), -1)
    _, first, counts = np.unique(rows, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        twice = names[int(first[counts > 1][0])]
        raise InvalidQueryError(f"values: {twice!r} is named twice (in another spelling)")


def _ibu(config: CollectionConfig, attr: AttributeConfig, stats: Stats) -> IBUResult:
    """IBU over the attribute's channel; a feature's joint cells are summed over classes."""
    channel = attribute_channel(config, attr, stats.n_reports, stats.sums, stats.floats)
    if channel is None:
        raise InvalidQueryError(
            f"attribute {attr.name!r} ({attr.mechanism}) does not state a finite channel,"
            " which IBU needs; use postprocess=norm-sub or simplex"
        )
    fit = bayesian_update(channel)
    if attr.is_feature:
        marginal = fit.estimate.reshape(attr.d, attr.classes).sum(axis=1)
        return replace(fit, estimate=marginal)
    return fit


def _ordinal(
    config: CollectionConfig, attr: AttributeConfig, stats: Stats, confidence: float
) -> OrdinalSummary | None:
    """The ordinal summaries of an attribute with ordered values, if its mechanism knows
    its covariance and the estimate can be normalised (see ``analyses.ordinal``)."""
    if not config.spec_of(attr).is_ordered:
        return None
    moments = attribute_covariance(config, attr, stats.n_reports, stats.sums, stats.floats)
    if moments is None:
        return None
    try:
        summary = ordinal_summary(*moments)
    except InsufficientReportsError:
        return None
    z = z_value(confidence)
    cdf, se = summary.cdf.cdf, summary.cdf.stderr

    def interval(f: Functional) -> OrdinalEstimate:
        low, high = f.value - z * f.stderr, f.value + z * f.stderr
        return OrdinalEstimate(value=f.value, stderr=f.stderr, ci_low=low, ci_high=high)

    return OrdinalSummary(
        cdf=cdf.tolist(),
        cdf_stderr=se.tolist(),
        cdf_ci_low=(cdf - z * se).tolist(),
        cdf_ci_high=(cdf + z * se).tolist(),
        mean_rank=interval(summary.mean_rank),
        median_rank=interval(summary.median_rank),
    )


def _label_mechanism(config: CollectionConfig) -> str:
    mechanisms = sorted({a.mechanism for a in config.features})
    return "joint " + "+".join(mechanisms)


def frequency_result(
    config: CollectionConfig,
    stats: Stats,
    attribute: str,
    confidence: float = 0.95,
    method: str = "none",
    values: str | None = None,
) -> FrequencyResult:
    """The released frequencies of one attribute (of the ``values`` named, if given), from
    ``n`` and the per-value sums.

    Raises :class:`InvalidQueryError` for an unknown attribute, a confidence outside
    (0, 1) or an unknown post-processing, and :class:`InsufficientReportsError` below
    the collection's ``release.min_reports``: of all reports, and under the ``sample``
    budget also of the ``n_j`` reports that carried the attribute (the label's estimate
    rests on every report).
    """
    index, known = check_frequency_query(config, attribute, confidence, method, values)
    named = None if values is None else named_values(config, index, values)
    n = require_reports(config, stats)
    carried: int | None = None
    estimate: FrequencyEstimate
    epsilon = config.privacy.attribute(attribute).epsilon
    if index is None:
        assert config.label is not None
        estimate = label_estimate(config, n, stats.sums, confidence)
        name, mechanism, listed = config.label.name, _label_mechanism(config), config.label.domain
    else:
        attr = config.attributes[index]
        name, mechanism, listed = attr.name, attr.mechanism, attr.values
        carried = carried_reports(config, attr, stats)
        if attr.is_feature:
            estimate = feature_marginal(attr, n, stats.sums, confidence)
        else:
            encoded = named.encoded if named is not None and named.direct else None
            estimate = attribute_estimate(
                config, attr, n, stats.sums, confidence, stats.floats, encoded
            )
    if named is not None:
        if not named.direct:
            estimate = estimate.take(named.encoded)
        listed = named.names
    repaired, ibu, ordinal = None, None, None
    if index is not None and named is None:
        attr = config.attributes[index]
        ordinal = _ordinal(config, attr, stats, confidence)
        if known == "ibu":
            fit = _ibu(config, attr, stats)
            repaired = fit.estimate.tolist()
            ibu = IBUStatus(
                iterations=fit.iterations,
                converged=fit.converged,
                change=fit.change,
                tolerance=DEFAULT_TOLERANCE,
            )
    if known not in ("none", "ibu"):
        repaired = postprocess(estimate.estimate, known).tolist()
    return FrequencyResult(
        collection=config.name,
        attribute=name,
        mechanism=mechanism,
        n_reports=n,
        epsilon=epsilon,
        record_epsilon=config.epsilon,
        confidence=confidence,
        central=central_of(config, n),
        postprocess=known,
        values=list(listed),
        estimate=estimate.estimate.tolist(),
        counts=estimate.counts.tolist(),
        stderr=estimate.stderr.tolist(),
        ci_low=estimate.ci_low.tolist(),
        ci_high=estimate.ci_high.tolist(),
        interval=estimate.interval,
        postprocessed=repaired,
        attribute_reports=carried,
        ibu=ibu,
        ordinal=ordinal,
    )


def estimate_frequencies(
    engine: Engine,
    collection: StoredCollection,
    attribute: str,
    confidence: float = 0.95,
    method: str = "none",
    values: str | None = None,
    window: Window | None = None,
) -> FrequencyResult:
    """Read the collection's statistics (of the periods of ``window``, if given) and
    release the frequencies of ``attribute`` (of the ``values`` named, if given)."""
    index, _ = check_frequency_query(collection.config, attribute, confidence, method, values)
    if values is not None:  # refuse a value before reading (large) statistics
        named_values(collection.config, index, values)
    stats = current_stats(engine, collection, window)
    result = frequency_result(collection.config, stats, attribute, confidence, method, values)
    return windowed(result, window)
