"""LDP-SGD rounds: noise off is plain mini-batch gradient descent bit for bit; with noise
the model learns from the reports' statistics; the plan follows its stated rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses.logistic.planning import (
    JITTER,
    MAX_ROUNDS,
    MIN_ROUND_SIZE,
    MIN_ROUNDS,
    noise_trace,
    plan_training,
    smoothness,
)
from ldp_shared.analyses.logistic.training import TrainingPlan, predict_proba, train
from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.learning.layout import FeatureLayout
from ldp_shared.mechanisms.base import EPSILON_SLACK
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.rand import seeded_rng

LAYOUT = FeatureLayout.model_validate(
    {
        "numeric": [{"name": "a", "lo": -1, "hi": 1}, {"name": "b", "lo": -1, "hi": 1}],
        "categorical": [{"name": "c", "domain": ["x", "y", "z"]}],
        "label": "label",
        "positive": "1",
    }
)
TRUE_W = np.array([-0.5, 2.0, -1.5, 0.8, 0.0, -0.8])


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = LAYOUT.encode(
        {"a": rng.uniform(-1, 1, n), "b": rng.uniform(-1, 1, n), "c": rng.choice(list("xyz"), n)}
    )
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ TRUE_W))).astype(float)
    return x, y


def test_noise_off_is_plain_minibatch_gradient_descent_bit_for_bit() -> None:
    x, y = data(3000, 1)
    plan = TrainingPlan(
        mechanism=None, epsilon=1.0, round_size=100, rounds=25, learning_rate=0.3,
        l2=1e-3, loss_share=0.1, average_from=0.4,
    )  # fmt: skip
    model = train(plan, x, y, rng=seeded_rng(7))
    order = seeded_rng(7).permutation(3000)[:2500].reshape(25, 100)
    w = np.zeros(6)
    total = np.zeros(6)
    for t, members in enumerate(order):
        rows = members[10:]
        p = 0.5 * (1.0 + np.tanh(0.5 * (x[rows] @ w)))
        g = ((p - y[rows])[:, None] * x[rows]).mean(axis=0)
        w = w - 0.3 * (g + 1e-3 * np.r_[0.0, w[1:]])
        if t >= 10:
            total += w
    assert np.array_equal(model.last_weights, w)
    assert np.array_equal(model.weights, total / 15)
    assert math.isinf(model.epsilon)  # noise off: no privacy
    first = model.curve[0]
    assert (first.gradient_reports, first.loss_reports) == (90, 10)
    assert first.loss == pytest.approx(math.log(2)) and first.loss_stderr == 0.0


@pytest.mark.parametrize(
    "mechanism", ["sampled-piecewise", "sampled-hybrid", "l1-laplace", "l2-gaussian"]
)
def test_with_noise_the_model_learns_from_the_reports(mechanism: str) -> None:
    x, y = data(20_000, 2)
    test_x, test_y = data(20_000, 3)
    devices = np.resize(np.arange(20_000), 300_000)
    delta = 1e-6 if mechanism == "l2-gaussian" else None
    plan = plan_training(LAYOUT, 300_000, mechanism, 4.0, delta=delta)
    model = train(plan, x, y, devices, seeded_rng(8))
    assert model.epsilon <= 4.0 * (1 + EPSILON_SLACK)
    if delta is None:
        assert model.delta == 0.0
    else:  # the gradient mechanism's δ is carried to the model
        assert 0.9e-6 < model.delta <= 1e-6
    accuracy = float(np.mean((predict_proba(model.weights, test_x) > 0.5) == test_y))
    best = float(np.mean(((test_x @ TRUE_W) > 0) == test_y))
    assert accuracy > best - 0.03, (accuracy, best)
    losses = np.array([r.loss for r in model.curve])
    errors = np.array([r.loss_stderr for r in model.curve])
    assert losses[0] == pytest.approx(math.log(2), abs=5 * errors[0])
    tail = losses[len(losses) // 2 :]
    assert tail.mean() < math.log(2) - 0.1  # the reported losses fall


def test_bad_plans_and_too_few_devices_are_refused() -> None:
    base = {"mechanism": None, "epsilon": 1.0, "round_size": 10, "rounds": 2, "learning_rate": 0.1}
    for change in [
        {"round_size": 1},
        {"rounds": 0},
        {"learning_rate": 0.0},
        {"learning_rate": math.nan},
        {"l2": -1.0},
        {"loss_share": 1.0},
        {"bound": 0.0},
        {"decay": "cosine"},
    ]:
        with pytest.raises(ConfigurationError):
            TrainingPlan(**{**base, **change})  # type: ignore[arg-type]
    x, y = data(15, 4)
    with pytest.raises(InvalidQueryError, match="needs 20 devices"):
        train(TrainingPlan(**base), x, y, rng=seeded_rng(1))  # type: ignore[arg-type]
    least = MIN_ROUND_SIZE * MIN_ROUNDS
    with pytest.raises(InvalidQueryError, match=f"at least {least} devices"):
        plan_training(LAYOUT, least - 1, "sampled-piecewise", 1.0)
    assert TrainingPlan(**{**base, "decay": "inverse-sqrt"}).rate(3) == pytest.approx(0.05)  # type: ignore[arg-type]


def test_the_plan_follows_its_rules() -> None:
    rate = 1 / smoothness(LAYOUT, 1e-4)
    assert rate == pytest.approx(1 / (4 / 4 + 1e-4))
    for epsilon in (0.5, 1.0, 4.0):
        plan = plan_training(LAYOUT, 1_000_000, "sampled-piecewise", epsilon)
        assert plan.bound == 0.5
        trace = noise_trace(gradient_randomizer("sampled-piecewise", 6, epsilon, 0.5))
        wanted = math.ceil(rate * trace / JITTER / 0.95)
        assert plan.round_size == max(wanted, MIN_ROUND_SIZE, 1_000_000 // MAX_ROUNDS)
        assert plan.rounds == 1_000_000 // plan.round_size
        assert plan.learning_rate == pytest.approx(rate)
    laplace = plan_training(LAYOUT, 1_000_000, "l1-laplace", 1.0)
    assert laplace.bound == 2.0  # half of ‖x‖₁ <= 4
    least = MIN_ROUND_SIZE * MIN_ROUNDS
    scarce = plan_training(LAYOUT, least, "sampled-piecewise", 0.1)
    assert (scarce.rounds, scarce.round_size) == (MIN_ROUNDS, MIN_ROUND_SIZE)
    trace = noise_trace(gradient_randomizer("sampled-piecewise", 6, 0.1, 0.5))
    assert scarce.learning_rate == pytest.approx(JITTER * MIN_ROUND_SIZE * 0.95 / trace)
    off = plan_training(LAYOUT, 1_000_000, None, 1.0)
    assert (off.round_size, off.rounds) == (2000, 500)
