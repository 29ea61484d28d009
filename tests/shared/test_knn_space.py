"""The kNN feature space: scaling, standardisation and refused query points."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.errors import ConfigurationError, InvalidQueryError, InvalidRecordError
from ldp_shared.knn_space import FeatureSpace, categorical, numeric

SPACE = FeatureSpace.of([numeric("age", 20, 60), categorical("colour", 3), categorical("one", 1)])


def test_scaled_to_the_cube() -> None:
    t, clipped = SPACE.scale_queries([[20, 0, 0], [60, 2, 0], [40, 1, 0]])
    assert t.tolist() == [[-1, -1, 0], [1, 1, 0], [0, 0, 0]]
    assert not clipped.any()


def test_records_and_queries_are_clipped_alike_and_queries_flagged() -> None:
    """A query outside the bounds is classified where a device with those values reports
    (both clipped), and the mask says which coordinates were clipped."""
    records = SPACE.scale_records([[80, 1, 0], [10, 2, 0], [30, 0, 0]])
    queries, clipped = SPACE.scale_queries([[80, 1, 0], [10, 2, 0], [30, 0, 0]])
    assert queries.tolist() == records.tolist() and records[:2, 0].tolist() == [1.0, -1.0]
    assert clipped.tolist() == [[True, False, False], [True, False, False], [False] * 3]


def test_a_bad_category_index_names_the_point_in_plain_numbers() -> None:
    with pytest.raises(InvalidQueryError) as caught:
        SPACE.scale_queries([[30, 1, 0], [30, np.float64(3.0), 0]])
    assert str(caught.value).startswith("point 1: colour = 3 is not a value index")
    assert "np." not in str(caught.value)


@pytest.mark.parametrize(
    "bad",
    [
        [[30, 1]],
        [[30, 1, 0, 0]],
        [[30, 1, 1]],
        [[math.nan, 1, 0]],
        [[30, math.inf, 0]],
        [[30, 1.5, 0]],
        [[30, 3, 0]],
    ],
)
def test_bad_query_points(bad: list[list[float]]) -> None:
    with pytest.raises(InvalidQueryError):
        SPACE.scale_queries(bad)
    with pytest.raises(InvalidRecordError):
        SPACE.scale_records(bad)


def test_default_standardisation_is_the_identity_and_public_one_applies() -> None:
    t, _ = SPACE.scale_queries([[25, 2, 0]])
    assert np.allclose(SPACE.standardise(t), t)
    space = FeatureSpace.of([numeric("age", 20, 60, centre=30, spread=5)])
    assert space.standardise(space.scale_queries([[40]])[0]).tolist() == [[2.0]]


def test_bad_features() -> None:
    with pytest.raises(ConfigurationError):
        numeric("x", 1, 1)
    with pytest.raises(ConfigurationError):
        numeric("x", 0, 1, spread=0.0)
    with pytest.raises(ConfigurationError):
        FeatureSpace.of([])


@pytest.mark.parametrize(
    ("lo", "hi", "problem"),
    [
        (1.0, 1.0, "lo must be below hi"),
        (0.0, math.inf, "lo and hi must be finite"),
        (-1.7e308, 1.7e308, "hi − lo must be a finite number"),
    ],
)
def test_bounds_that_cannot_scale_a_value_are_refused(lo: float, hi: float, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=f"feature 'x': {problem}"):
        FeatureSpace([numeric("x", lo, hi)])
