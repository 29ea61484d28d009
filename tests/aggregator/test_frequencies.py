"""Frequency estimation from the statistics: equal to the mechanism's own estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_aggregator.frequencies import frequency_result
from ldp_aggregator.storage.stats import Stats
from ldp_shared.analyses.postprocess import norm_sub, project_to_simplex
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.schema import CollectionSpec

from .conftest import AGES, COLORS, ITEMS, packed_reports, spec_payload


@pytest.fixture(scope="module")
def config() -> CollectionConfig:
    return build_config(CollectionSpec.model_validate(spec_payload(min_reports=50)))


@pytest.fixture(scope="module")
def stats(config: CollectionConfig) -> Stats:
    packed = packed_reports(config, 2000, seed=11)
    return Stats(n_reports=2000, sums=decode_reports(config, packed).sums)


@pytest.mark.parametrize(("index", "name", "domain"), [(0, "color", COLORS), (1, "age", AGES)])
def test_equals_the_mechanism_estimate(
    config: CollectionConfig, stats: Stats, index: int, name: str, domain: list[str]
) -> None:
    attribute = config.attributes[index]
    sums = stats.sums[attribute.stats_offset : attribute.stats_offset + attribute.d]
    direct = config.randomizers[index].estimate(sums, 2000, 0.9)
    result = frequency_result(config, stats, name, confidence=0.9)
    assert result.values == domain
    assert result.mechanism == attribute.mechanism
    assert result.n_reports == 2000 and result.confidence == 0.9
    assert np.array_equal(result.estimate, direct.estimate)
    assert np.array_equal(result.counts, direct.counts)
    assert np.array_equal(result.stderr, direct.stderr)
    assert np.array_equal(result.ci_low, direct.ci_low)
    assert np.array_equal(result.ci_high, direct.ci_high)
    assert result.postprocess == "none" and result.postprocessed is None
    assert result.epsilon == attribute.epsilon
    assert result.record_epsilon == config.epsilon


def test_epsilons(config: CollectionConfig, stats: Stats) -> None:
    color = frequency_result(config, stats, "color")
    age = frequency_result(config, stats, "age")
    basket = frequency_result(config, stats, "basket")
    assert math.isclose(color.epsilon + age.epsilon, 2.0)  # the record's ε is split
    assert math.isclose(basket.epsilon, len(ITEMS) * math.log(0.8 / 0.2))
    assert math.isclose(color.record_epsilon, color.epsilon + age.epsilon + basket.epsilon)


@pytest.mark.parametrize(
    ("method", "repair"), [("norm-sub", norm_sub), ("simplex", project_to_simplex)]
)
def test_postprocessing_keeps_the_raw_estimate(
    config: CollectionConfig, stats: Stats, method: str, repair: object
) -> None:
    raw = frequency_result(config, stats, "color")
    result = frequency_result(config, stats, "color", method=method)
    assert result.estimate == raw.estimate
    assert result.postprocess == method
    assert result.postprocessed is not None
    assert np.allclose(result.postprocessed, repair(np.array(raw.estimate)))  # type: ignore[operator]
    assert math.isclose(sum(result.postprocessed), 1.0)
    assert min(result.postprocessed) >= 0.0


def test_below_the_release_minimum_nothing_is_released(config: CollectionConfig) -> None:
    few = Stats(n_reports=49, sums=np.zeros(config.stats_length, dtype=np.int64))
    with pytest.raises(InsufficientReportsError, match="49"):
        frequency_result(config, few, "color")
    empty = Stats(n_reports=0, sums=np.zeros(config.stats_length, dtype=np.int64))
    with pytest.raises(InsufficientReportsError):
        frequency_result(config, empty, "color")


def test_under_sample_the_minimum_applies_to_the_reports_carrying_the_attribute() -> None:
    spec = CollectionSpec.model_validate(
        {
            "name": "sampled",
            "epsilon": 2.0,
            "budget": "sample",
            "release": {"min_reports": 50},
            "attributes": [
                {"name": "a", "domain": ["x", "y"]},
                {"name": "b", "domain": ["x", "y", "z"], "mechanism": "grr"},
            ],
        }
    )
    config = build_config(spec)
    a, b = config.attributes
    sums = np.zeros(config.stats_length, dtype=np.int64)
    assert a.count_offset is not None and b.count_offset is not None
    sums[a.count_offset], sums[b.count_offset] = 51, 49  # 100 reports: 51 carried a
    sums[a.stats_offset : a.stats_offset + 2] = [30, 21]
    stats = Stats(n_reports=100, sums=sums)
    assert frequency_result(config, stats, "a").attribute_reports == 51
    with pytest.raises(InsufficientReportsError, match="carried by 49 of its 100 reports"):
        frequency_result(config, stats, "b")


@pytest.mark.parametrize(
    ("attribute", "confidence", "method"),
    [
        ("nope", 0.95, "none"),
        ("color", 0.0, "none"),
        ("color", 1.0, "none"),
        ("color", float("nan"), "none"),
        ("color", 0.95, "clip"),
        ("basket", 0.95, "simplex"),  # item supports are not a distribution
    ],
)
def test_invalid_queries(
    config: CollectionConfig, stats: Stats, attribute: str, confidence: float, method: str
) -> None:
    with pytest.raises(InvalidQueryError):
        frequency_result(config, stats, attribute, confidence, method)


def test_invalid_query_is_reported_before_insufficient_reports(config: CollectionConfig) -> None:
    few = Stats(n_reports=1, sums=np.zeros(config.stats_length, dtype=np.int64))
    with pytest.raises(InvalidQueryError):
        frequency_result(config, few, "nope")
