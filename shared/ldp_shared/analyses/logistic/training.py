"""LDP-SGD for logistic regression, round by round, from the reports' statistics alone.

Each round publishes the weights ``w_t``; ``round_size`` fresh devices answer (each device
takes part in one round only, so its privacy is the one report's ε): a share
``loss_share`` reports its capped loss, the rest their perturbed gradients
(:mod:`.device`). The aggregator keeps only each mechanism's int64 sufficient
statistics (``accumulate``), estimates the round's mean clipped gradient ``ĝ_t`` with a
standard error per coordinate and the mean loss at ``w_t`` (``estimate_stats``), and steps

    w_{t+1} = w_t − η_t·(ĝ_t + λ·w̃_t),   w̃ = w with the intercept set to 0,
    η_t = η (``constant``) or η/√(1 + t) (``inverse-sqrt``).

The released weights are the average of the iterates from round ``⌊average_from·T⌋`` on
(Polyak–Ruppert tail averaging): a constant step keeps the iterates jittering around the
optimum by the gradient noise; their average cancels most of it (Polyak and Juditsky,
SIAM J. Control Optim. 1992; Jain, Kakade, Kidambi, Netrapalli and Sidford, JMLR 2018
for tail averaging).

``mechanism=None`` switches the noise off (the round's exact mean gradient, unclipped,
and mean capped loss): plain mini-batch gradient descent on the same devices, for tests and
as the reference that separates optimisation error from privacy error. It is never a
privacy setting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidQueryError
from ldp_shared.kernel import FloatArray
from ldp_shared.learning import device
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.gradient_mechanisms import gradient_randomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.rand import resolve_rng
from ldp_shared.wire.training import TrainingSpec

Decay = Literal["constant", "inverse-sqrt"]


@dataclass(frozen=True)
class TrainingPlan:
    """What an analyst fixes before the first round."""

    mechanism: str | None
    """A registered gradient mechanism, or ``None`` for noise off (tests, references)."""
    epsilon: float
    round_size: int
    rounds: int
    learning_rate: float
    decay: Decay = "constant"
    l2: float = 1e-4
    bound: float = 1.0
    """The clipping radius in the mechanism's norm."""
    loss_share: float = 0.05
    average_from: float = 0.5
    delta: float | None = None
    """δ per device for an (ε, δ) gradient mechanism (``l2-gaussian``); ``None`` otherwise."""

    def __post_init__(self) -> None:
        if self.round_size < 2 or self.rounds < 1:
            raise ConfigurationError("a plan needs round_size >= 2 and rounds >= 1")
        for name, value in (("learning_rate", self.learning_rate), ("bound", self.bound)):
            if not (math.isfinite(value) and value > 0.0):
                raise ConfigurationError(f"{name} must be a positive number, got {value!r}")
        if not (math.isfinite(self.l2) and self.l2 >= 0.0):
            raise ConfigurationError(f"l2 must be >= 0, got {self.l2!r}")
        if not (0.0 <= self.loss_share < 1.0 and 0.0 <= self.average_from < 1.0):
            raise ConfigurationError("loss_share and average_from must lie in [0, 1)")
        if self.decay not in ("constant", "inverse-sqrt"):
            raise ConfigurationError(f"unknown decay {self.decay!r}")

    def rate(self, t: int) -> float:
        """``η_t``."""
        return self.learning_rate / (math.sqrt(1.0 + t) if self.decay == "inverse-sqrt" else 1.0)

    @property
    def tail_start(self) -> int:
        """The first round whose iterate enters the released average."""
        return math.floor(self.average_from * self.rounds)

    @property
    def loss_devices(self) -> int:
        """Devices per round that report their loss."""
        return math.floor(self.round_size * self.loss_share)


@dataclass
class RoundLog:
    """What one round released: its reports, the loss at ``w_t`` and the gradient's size."""

    round: int
    gradient_reports: int
    loss_reports: int
    loss: float
    loss_stderr: float
    gradient_norm: float
    """``‖ĝ_t‖₂`` (noise included)."""
    noise_norm: float
    """``√(Σ_j Var ĝ_tj)``: the estimated size of its noise."""


@dataclass
class TrainedModel:
    """The released weights and the record of training."""

    weights: FloatArray
    last_weights: FloatArray
    epsilon: float
    """Exact ε of the one report each device sent (gradient or loss, the larger);
    infinite with the noise off."""
    curve: list[RoundLog] = field(default_factory=list)
    delta: float = 0.0
    """δ of that report (the gradient mechanism's; the loss mechanisms are pure)."""


def build_mechanisms(
    plan: TrainingPlan, dimension: int
) -> tuple[GradientRandomizer | None, LatticeRandomizer | None]:
    """The plan's gradient and loss mechanisms (``None``, ``None`` with noise off)."""
    if plan.mechanism is None:
        return None, None
    gradient = gradient_randomizer(plan.mechanism, dimension, plan.epsilon, plan.bound, plan.delta)
    return gradient, device.loss_randomizer(plan.epsilon)


def round_gradient(
    mechanism: GradientRandomizer | None,
    weights: FloatArray,
    x: FloatArray,
    y: FloatArray,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """Device side then aggregator side of one round's gradients: ``ĝ`` and ``Var ĝ``."""
    if mechanism is None:
        return device.gradients(weights, x, y).mean(axis=0), np.zeros(x.shape[1])
    answers = device.gradient_reports(mechanism, weights, x, y, rng)  # on the devices
    return estimate_gradient(mechanism, answers)


def estimate_gradient(
    mechanism: GradientRandomizer, answers: NDArray[np.int64]
) -> tuple[FloatArray, FloatArray]:
    """The round's mean gradient and its variance per coordinate, from the answers'
    sufficient statistics alone (what the aggregator keeps)."""
    return mechanism.estimate_mean(mechanism.accumulate(answers), len(answers))


def round_loss(
    mechanism: LatticeRandomizer | None,
    weights: FloatArray,
    x: FloatArray,
    y: FloatArray,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """The mean capped loss at ``weights`` and its standard error (NaN with no reports)."""
    if len(x) == 0:
        return math.nan, math.nan
    if mechanism is None:
        return float(np.minimum(device.losses(weights, x, y), device.LOSS_CAP).mean()), 0.0
    return estimate_loss(mechanism, device.loss_reports(mechanism, weights, x, y, rng))


def estimate_loss(mechanism: LatticeRandomizer, answers: NDArray[np.int64]) -> tuple[float, float]:
    """The mean capped loss of the loss reports and its standard error (NaN with none)."""
    if len(answers) == 0:
        return math.nan, math.nan
    estimate = mechanism.estimate_stats(mechanism.accumulate(answers), len(answers), 0.95)
    return float(estimate.estimate[0]), float(estimate.stderr[0])


def step(weights: FloatArray, gradient: FloatArray, rate: float, l2: float) -> FloatArray:
    """``w − η(ĝ + λ·w̃)`` (no penalty on the intercept, coordinate 0)."""
    penalty = l2 * weights
    penalty[0] = 0.0
    out: FloatArray = weights - rate * (gradient + penalty)
    return out


def close_round(
    plan: TrainingPlan,
    t: int,
    weights: FloatArray,
    weight_sum: FloatArray,
    gradient: tuple[FloatArray, FloatArray],
    loss: tuple[float, float],
    reports: tuple[int, int],
) -> tuple[FloatArray, FloatArray, RoundLog]:
    """Round ``t``'s step from its estimates: ``gradient`` (``ĝ``, ``Var ĝ``), ``loss``
    (mean, standard error) and ``reports`` (gradient, loss). Returns the next weights,
    the tail's running sum and the round's log. Shared by :func:`train` and the
    aggregator's training jobs, so both take the same steps."""
    g, var = gradient
    log = RoundLog(
        t,
        reports[0],
        reports[1],
        loss[0],
        loss[1],
        float(np.linalg.norm(g)),
        float(math.sqrt(var.sum())),
    )
    after = step(weights, g, plan.rate(t), plan.l2)
    total = weight_sum + after if t >= plan.tail_start else weight_sum
    return after, total, log


def released_weights(plan: TrainingPlan, weight_sum: FloatArray) -> FloatArray:
    """The tail average: the sum of the iterates from :attr:`TrainingPlan.tail_start` on,
    over their number."""
    out: FloatArray = weight_sum / (plan.rounds - plan.tail_start)
    return out


def train(
    plan: TrainingPlan,
    x: FloatArray,
    y: FloatArray,
    devices: NDArray[np.int64] | None = None,
    rng: np.random.Generator | None = None,
) -> TrainedModel:
    """Run the plan: device ``i`` holds record ``devices[i]`` of ``x, y`` (default: one
    device per record). Devices are assigned to rounds in a random order, each once."""
    gen = resolve_rng(rng)
    holders = np.arange(len(x)) if devices is None else np.asarray(devices, dtype=np.int64)
    needed = plan.round_size * plan.rounds
    if needed > len(holders):
        raise InvalidQueryError(
            f"the plan needs {needed} devices ({plan.rounds} rounds of {plan.round_size}),"
            f" only {len(holders)} are available"
        )
    gradient_mech, loss_mech = build_mechanisms(plan, x.shape[1])
    order = holders[gen.permutation(len(holders))[:needed]].reshape(plan.rounds, -1)
    weights = np.zeros(x.shape[1])
    total = np.zeros_like(weights)
    curve = []
    for t, members in enumerate(order):
        loss_rows, grad_rows = members[: plan.loss_devices], members[plan.loss_devices :]
        loss = round_loss(loss_mech, weights, x[loss_rows], y[loss_rows], gen)
        gradient = round_gradient(gradient_mech, weights, x[grad_rows], y[grad_rows], gen)
        counts = (len(grad_rows), len(loss_rows))
        weights, total, log = close_round(plan, t, weights, total, gradient, loss, counts)
        curve.append(log)
    epsilon, delta = math.inf, 0.0  # noise off: the devices sent their raw gradients
    if gradient_mech is not None and loss_mech is not None:
        epsilon = max(gradient_mech.exact_epsilon, loss_mech.exact_epsilon)
        delta = gradient_mech.delta
    return TrainedModel(released_weights(plan, total), weights, epsilon, curve, delta)


def predict_proba(weights: FloatArray, x: FloatArray) -> FloatArray:
    """``P(y = 1 | x) = σ(w·x)``."""
    return device.probabilities(weights, x)


def plan_of(spec: TrainingSpec) -> TrainingPlan:
    """The library's plan of a complete spec (every planned value filled in)."""
    if spec.round_size is None or spec.rounds is None or spec.learning_rate is None:
        raise ValueError("the spec is not complete: round_size, rounds and learning_rate")
    return TrainingPlan(
        mechanism=spec.mechanism,
        epsilon=spec.epsilon,
        round_size=spec.round_size,
        rounds=spec.rounds,
        learning_rate=spec.learning_rate,
        decay=spec.decay,
        l2=spec.l2,
        bound=1.0 if spec.bound is None else spec.bound,
        loss_share=spec.loss_share,
        average_from=spec.average_from,
        delta=spec.delta,
    )
