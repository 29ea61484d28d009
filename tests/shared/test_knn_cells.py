"""The public part of a kNN collection: machine-independent hyperplanes and the spec."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.knn_cells import KnnCells, hyperplanes, public_normals


def test_public_normals_are_pinned_and_standard_normal() -> None:
    # the same numbers on every machine and numpy version: devices depend on it
    assert public_normals(7, 3) == pytest.approx([-0.50308361, 1.57625525, -1.8948358], abs=1e-7)
    assert np.array_equal(public_normals(7, 5)[:3], public_normals(7, 3))
    x = public_normals(11, 100_000)
    # fixed seed; 5 standard errors of the mean and of the variance
    assert abs(x.mean()) < 5 / math.sqrt(x.size)
    assert abs(x.var() - 1.0) < 5 * math.sqrt(2 / x.size)
    assert abs(float(np.mean(x < -1.959964)) - 0.025) < 5 * math.sqrt(0.025 * 0.975 / x.size)


def test_hyperplanes_depend_on_the_seed_and_are_read_only() -> None:
    normals, thresholds = hyperplanes(3, 2, 4, 1)
    assert normals.shape == (2, 4, 3) and thresholds.shape == (2, 4)
    assert not np.array_equal(normals, hyperplanes(3, 2, 4, 2)[0])
    with pytest.raises(ValueError):
        normals[0, 0, 0] = 1.0


@pytest.mark.parametrize(
    "features",
    [
        [{"name": "x"}],
        [{"name": "x", "lo": 1, "hi": 0}],
        [{"name": "x", "lo": 0, "hi": 1, "domain": ["a"]}],
        [{"name": "x", "lo": 0, "hi": 1, "spread": 0}],
        [],
    ],
)
def test_bad_features_are_refused(features: list[dict[str, object]]) -> None:
    with pytest.raises(ValueError):
        KnnCells.model_validate({"features": features})
