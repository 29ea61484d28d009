"""Norm-Sub and the simplex projection: agreement, optimality, idempotence, dispatch."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.postprocess import (
    POSTPROCESS_METHODS,
    norm_sub,
    postprocess,
    project_to_simplex,
)
from ldp_shared.errors import InvalidQueryError


def _inputs() -> list[np.ndarray]:
    gen = np.random.default_rng(12345)  # inputs only; nothing random is under test
    out: list[np.ndarray] = []
    for d in (1, 2, 3, 5, 10, 50, 300):
        for scale in (0.01, 0.1, 1.0, 5.0):
            out.append(gen.dirichlet(np.ones(d)) + gen.normal(0.0, scale / d, d))
    out += [np.array([-0.5, -0.2, -0.9]), np.array([0.3, 0.3, 0.3, 0.3]), np.zeros(4)]
    return out


def _assert_on_simplex(x: np.ndarray) -> None:
    assert np.all(x >= 0.0)
    assert x.sum() == pytest.approx(1.0, abs=1e-12)


def _assert_is_projection(v: np.ndarray, x: np.ndarray) -> None:
    """KKT of min ||x - v||² on the simplex: x = max(v - θ, 0) for one θ."""
    positive = x > 0.0
    theta = v[positive] - x[positive]
    assert np.ptp(theta) < 1e-9
    assert np.all(v[~positive] <= theta[0] + 1e-9)


@pytest.mark.parametrize("v", _inputs())
def test_norm_sub_and_projection_agree(v: np.ndarray) -> None:
    a = norm_sub(v)
    b = project_to_simplex(v)
    np.testing.assert_allclose(a, b, rtol=0.0, atol=1e-9)
    for x in (a, b):
        _assert_on_simplex(x)
        _assert_is_projection(v, x)


@pytest.mark.parametrize("seed", range(10))
def test_idempotent_on_the_simplex(seed: int) -> None:
    gen = np.random.default_rng(seed)
    x = gen.dirichlet(np.full(12, 0.3))
    x[gen.integers(0, 12, 3)] = 0.0
    x /= x.sum()
    np.testing.assert_allclose(norm_sub(x), x, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(project_to_simplex(x), x, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(norm_sub(norm_sub(x + 0.1)), norm_sub(x + 0.1), atol=1e-12)


@pytest.mark.parametrize(
    ("v", "expected"),
    [
        ([0.5, 0.5, -0.2], [0.5, 0.5, 0.0]),
        ([0.6, 0.3, 0.3], [0.6 - 0.2 / 3, 0.3 - 0.2 / 3, 0.3 - 0.2 / 3]),
        ([1.5, 0.2, -0.1], [1.0, 0.0, 0.0]),  # the second round removes 0.2 as well
        ([0.2, 0.2], [0.5, 0.5]),
        ([7.0], [1.0]),
    ],
)
def test_known_values(v: list[float], expected: list[float]) -> None:
    for method in ("norm-sub", "simplex"):
        np.testing.assert_allclose(postprocess(np.array(v), method), expected, atol=1e-12)


def test_inputs_are_not_modified() -> None:
    v = np.array([0.7, -0.1, 0.5])
    kept = v.copy()
    for method in POSTPROCESS_METHODS:
        postprocess(v, method)
    np.testing.assert_array_equal(v, kept)


def test_none_returns_a_copy_of_the_raw_estimate() -> None:
    v = np.array([0.7, -0.1, 0.5])
    out = postprocess(v, "none")
    np.testing.assert_array_equal(out, v)
    out[0] = 9.0
    assert v[0] == 0.7


def test_methods() -> None:
    assert POSTPROCESS_METHODS == ("none", "norm-sub", "simplex")


@pytest.mark.parametrize("method", ["normsub", "Simplex", "", "clip"])
def test_unknown_method(method: str) -> None:
    with pytest.raises(InvalidQueryError):
        postprocess(np.array([0.5, 0.5]), method)
