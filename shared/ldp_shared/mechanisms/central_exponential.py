"""The central exponential mechanism over scores (McSherry and Talwar, FOCS 2007).

Not a local randomizer: a curator who holds the data scores each candidate ``i`` with
``s_i`` (sensitivity ``Δ``) and releases one candidate with probability
``∝ exp(ε·s_i/(2Δ))``. Kept beside the local mechanisms because the notebook this project
started from uses it, and its table of probabilities is a test vector; the local
exponential mechanism is :mod:`ldp_shared.mechanisms.exponential`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ldp_shared.errors import ConfigurationError
from ldp_shared.kernel import FloatArray
from ldp_shared.rand import resolve_rng

__all__ = ["exponential_mechanism", "exponential_probabilities"]


def _central_logits(scores: ArrayLike, epsilon: float, sensitivity: float) -> FloatArray:
    """``ε·s_i/(2Δ)`` minus its largest value, after checking the arguments."""
    s = np.asarray(scores, dtype=np.float64)
    eps, delta = float(epsilon), float(sensitivity)
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
        raise ConfigurationError("scores must be a non-empty 1-d array of finite numbers")
    if not (math.isfinite(eps) and eps >= 0.0):
        raise ConfigurationError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    if not (math.isfinite(delta) and delta > 0.0):
        raise ConfigurationError(f"sensitivity must be finite and > 0, got {sensitivity!r}")
    logits: FloatArray = eps * s / (2.0 * delta)
    centred: FloatArray = logits - logits.max()
    return centred


def exponential_probabilities(scores: ArrayLike, epsilon: float, sensitivity: float) -> FloatArray:
    """Central exponential mechanism (McSherry and Talwar 2007): ``P(i) ∝ exp(ε·s_i/(2Δ))``.

    ``ε = 0`` is allowed: the uniform distribution, 0-DP, which reveals nothing (the
    notebook's table starts there). ``ε`` must be finite and ``>= 0``, ``Δ`` finite and
    ``> 0``, the scores finite. The largest exponent is subtracted first, so large scores
    or ε do not overflow.
    """
    weights = np.exp(_central_logits(scores, epsilon, sensitivity))
    probabilities: FloatArray = weights / weights.sum()
    return probabilities


def exponential_mechanism(
    scores: ArrayLike,
    epsilon: float,
    sensitivity: float,
    rng: np.random.Generator | None = None,
    size: int | None = None,
) -> Any:
    """One index drawn by the central exponential mechanism (``size`` draws if given).

    Gumbel-max: ``argmax_i (ε·s_i/(2Δ) + G_i)`` with i.i.d. standard Gumbel ``G_i`` has
    the law of :func:`exponential_probabilities`, with no normalising and no underflow.
    """
    logits = _central_logits(scores, epsilon, sensitivity)
    gen = resolve_rng(rng)
    shape = (1 if size is None else size, logits.size)
    choice = np.argmax(logits + gen.gumbel(size=shape), axis=1)
    return int(choice[0]) if size is None else choice
