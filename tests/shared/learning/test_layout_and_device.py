"""The feature layout and the device side: encoding, the norms that bound every gradient
(so each mechanism's clipping bounds the sensitivity it assumes), the gradient and loss."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from ldp_shared.analyses.logistic.planning import default_bound
from ldp_shared.errors import InvalidRecordError
from ldp_shared.learning import device
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.gradient_mechanisms import gradient_mechanism_names, gradient_randomizer
from ldp_shared.mechanisms.hybrid import HybridRandomizer
from ldp_shared.mechanisms.piecewise import PiecewiseRandomizer
from ldp_shared.rand import seeded_rng

LAYOUT = FeatureLayout.model_validate(
    {
        "numeric": [{"name": "age", "lo": 17, "hi": 90}, {"name": "hours", "lo": 0, "hi": 100}],
        "categorical": [
            {"name": "sex", "domain": ["f", "m"]},
            {"name": "c", "domain": list("abc")},
        ],
        "label": "income",
        "positive": ">50K",
    }
)


def columns(n: int, rng: np.random.Generator) -> dict[str, list[object]]:
    return {
        "age": list(rng.uniform(0, 120, n)),
        "hours": list(rng.uniform(-10, 110, n)),
        "sex": list(rng.choice(["f", "m"], n)),
        "c": list(rng.choice(list("abc"), n)),
    }


def test_encoding_scales_clips_and_one_hot_encodes() -> None:
    assert LAYOUT.dimension == 8
    assert LAYOUT.coordinate_names() == [
        "intercept", "age", "hours", "sex=f", "sex=m", "c=a", "c=b", "c=c",
    ]  # fmt: skip
    x = LAYOUT.encode({"age": [17, 90, 200], "hours": [50, -5, 100], "sex": ["m", "f", "f"],
                       "c": ["c", "a", "b"]})  # fmt: skip
    np.testing.assert_array_equal(
        x,
        [[1, -1, 0, 0, 1, 0, 0, 1], [1, 1, -1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 0, 0, 1, 0]],
    )
    assert LAYOUT.labels([">50K", "<=50K", ">50K"]).tolist() == [1.0, 0.0, 1.0]


def test_bad_records_and_layouts_are_refused() -> None:
    good = {"age": [20.0], "hours": [3.0], "sex": ["f"], "c": ["a"]}
    for change, message in [
        ({"age": [float("nan")]}, "finite"),
        ({"age": ["x"]}, "numbers"),
        ({"age": [10**400]}, r"feature 'age': value 100000… \(401 digits\) is out of range"),
        ({"c": ["d"]}, "not in its domain"),
        ({"sex": ["f", "m"]}, "same length"),
    ]:
        with pytest.raises(InvalidRecordError, match=message):
            LAYOUT.encode({**good, **change})
    with pytest.raises(InvalidRecordError, match="missing feature columns: c"):
        LAYOUT.encode({k: v for k, v in good.items() if k != "c"})
    with pytest.raises(ValidationError):
        FeatureLayout.model_validate({"numeric": [{"name": "a", "lo": 1, "hi": 1}], "label": "y",
                                      "positive": "1"})  # fmt: skip
    with pytest.raises(ValidationError):
        FeatureLayout.model_validate({"label": "y", "positive": "1"})


@pytest.mark.parametrize("name", gradient_mechanism_names())
def test_the_layout_bounds_every_gradient_and_clipping_enforces_the_mechanism_ball(
    name: str,
) -> None:
    rng = seeded_rng(4)
    x = LAYOUT.encode(columns(5000, rng))
    y = (rng.random(5000) < 0.3).astype(float)
    for norm in ("linf", "l1", "l2"):
        order = {"linf": np.inf, "l1": 1, "l2": 2}[norm]
        assert np.linalg.norm(x, ord=order, axis=1).max() <= LAYOUT.max_norm(norm) + 1e-12
    delta = 1e-6 if name == "l2-gaussian" else None
    mechanism = gradient_randomizer(name, LAYOUT.dimension, 2.0, 1.0, delta)
    bound = default_bound(LAYOUT, mechanism)
    mechanism = gradient_randomizer(name, LAYOUT.dimension, 2.0, bound, delta)
    order = {"linf": np.inf, "l1": 1, "l2": 2}[mechanism.norm]
    for scale in (0.1, 3.0, 50.0):
        g = device.gradients(rng.normal(0, scale, LAYOUT.dimension), x, y)
        assert np.linalg.norm(g, ord=order, axis=1).max() <= 2 * bound + 1e-12
        clipped = mechanism.clip(g)
        assert np.linalg.norm(clipped, ord=order, axis=1).max() <= bound * (1 + 1e-12)
        inside = np.linalg.norm(g, ord=order, axis=1) <= bound
        np.testing.assert_array_equal(clipped[inside], g[inside])
        mechanism.perturb(clipped, rng)  # accepted: inside the ball


def test_the_gradient_is_the_loss_derivative() -> None:
    rng = seeded_rng(5)
    x = LAYOUT.encode(columns(50, rng))
    y = (rng.random(50) < 0.5).astype(float)
    w = rng.normal(0, 1, LAYOUT.dimension)
    h = 1e-6
    numeric = np.stack(
        [(device.losses(w + h * e, x, y) - device.losses(w - h * e, x, y)) / (2 * h)
         for e in np.eye(LAYOUT.dimension)], axis=1)  # fmt: skip
    np.testing.assert_allclose(device.gradients(w, x, y), numeric, atol=1e-6)
    assert np.allclose(device.losses(np.zeros(LAYOUT.dimension), x, y), np.log(2))
    big = device.losses(np.full(LAYOUT.dimension, 400.0), x, np.zeros(50))
    assert np.isfinite(big).all()


def test_the_loss_mechanism_is_the_one_with_the_smaller_worst_case() -> None:
    assert isinstance(device.loss_randomizer(1.0), HybridRandomizer)
    assert isinstance(device.loss_randomizer(4.0), PiecewiseRandomizer)
    m = device.loss_randomizer(4.0)
    assert (m.lo, m.hi) == (0.0, device.LOSS_CAP)
