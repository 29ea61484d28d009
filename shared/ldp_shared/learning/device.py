"""What a device computes and sends in a logistic-regression job (vectorised over devices).

A device holds one encoded record ``x`` (:mod:`.layout`) with label ``y ∈ {0, 1}`` and is
sent the round's weights ``w``. It answers **once**, with one of:

* a **gradient report**: the gradient of its logistic loss
  ``ℓ(w) = log(1 + e^{w·x}) − y·w·x``, ``∇ℓ = (σ(w·x) − y)·x``, clipped into the
  mechanism's ball (:meth:`~ldp_shared.mechanisms.gradient.GradientRandomizer.clip`) and
  perturbed by the job's gradient mechanism at the job's ε;
* a **loss report** (a small share of each round's devices): its loss at ``w``, capped at
  :data:`LOSS_CAP` and perturbed by a lattice numeric mechanism on ``[0, LOSS_CAP]`` at
  the same ε (:func:`loss_randomizer`), from which the aggregator estimates the loss
  curve without any raw value.

Either way one report of exact ε leaves the device; the raw record and the raw gradient
never do.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FloatArray
from ldp_shared.mechanisms._checks import check_epsilon
from ldp_shared.mechanisms.gradient import GradientRandomizer
from ldp_shared.mechanisms.hybrid import HybridRandomizer
from ldp_shared.mechanisms.lattice import LatticeRandomizer
from ldp_shared.mechanisms.numeric import to_unit
from ldp_shared.mechanisms.piecewise import LARGEST_EPSILON, PiecewiseRandomizer

LOSS_CAP = 4.0
"""Losses are reported as ``min(ℓ, 4)``: a record the model gets wrong by a logit margin
beyond about 4 counts as 4 (the loss at ``w = 0`` is ``ln 2 ≈ 0.69``)."""


def margins(weights: FloatArray, x: FloatArray) -> FloatArray:
    """``w·x`` per record."""
    out: FloatArray = x @ weights
    return out


def probabilities(weights: FloatArray, x: FloatArray) -> FloatArray:
    """``σ(w·x)``, computed as ``(1 + tanh(z/2))/2`` (no overflow)."""
    out: FloatArray = 0.5 * (1.0 + np.tanh(0.5 * margins(weights, x)))
    return out


def gradients(weights: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """``(σ(w·x) − y)·x`` per record (``n × d``)."""
    out: FloatArray = (probabilities(weights, x) - y)[:, None] * x
    return out


def losses(weights: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """``log(1 + e^{−s·w·x})``, ``s = 2y − 1``, per record."""
    out: FloatArray = np.logaddexp(0.0, -(2.0 * y - 1.0) * margins(weights, x))
    return out


def gradient_reports(
    mechanism: GradientRandomizer,
    weights: FloatArray,
    x: FloatArray,
    y: FloatArray,
    rng: np.random.Generator | None = None,
) -> NDArray[np.int64]:
    """The perturbed answers of devices holding ``x, y`` at ``weights``."""
    return mechanism.perturb(mechanism.clip(gradients(weights, x, y)), rng)


def loss_randomizer(epsilon: float) -> LatticeRandomizer:
    """The lattice mechanism on ``[0, LOSS_CAP]`` with the smaller worst-case variance at
    ``epsilon``: Hybrid at small ε, Piecewise at large ε (see ``docs/mechanisms.md``)."""
    eps = check_epsilon(epsilon, LARGEST_EPSILON, "the loss mechanism (loss_share > 0)")
    options: list[LatticeRandomizer] = []
    for kind in (PiecewiseRandomizer, HybridRandomizer):
        try:  # one of them may have no channel at this ε (hybrid near 14 to 24)
            options.append(kind(epsilon=eps, lo=0.0, hi=LOSS_CAP))
        except ConfigurationError as error:
            refusal = error
    if not options:
        raise ConfigurationError(f"the loss mechanism (loss_share > 0): {refusal.detail}")
    return min(options, key=lambda m: float(m.channel.level_variances.max()))


def loss_reports(
    mechanism: LatticeRandomizer,
    weights: FloatArray,
    x: FloatArray,
    y: FloatArray,
    rng: np.random.Generator | None = None,
) -> NDArray[np.int64]:
    """The perturbed capped losses of devices holding ``x, y`` at ``weights``."""
    capped = np.minimum(losses(weights, x, y), LOSS_CAP)
    return mechanism.perturb(to_unit(capped, 0.0, LOSS_CAP), rng)
