"""Parameter checks shared by the mechanism specs.

**The one rule on ε.** Every mechanism, of a collection's attribute or of a training
job's gradient, refuses its ε with :func:`check_epsilon` before it computes anything: ε
must be a number above 0 and at most :data:`MAX_EPSILON`, or at most the smaller limit
that the mechanism states for itself (the lattice channels, whose limits are measured
where they are defined). A refusal names the ε that was asked for and the limit, never an
intermediate value (a share of ε, one coordinate's ε).
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError

MAX_EPSILON = math.log(sys.float_info.max)
"""ln of the largest double, ≈ 709.78: the largest ε any mechanism takes. Above it
``e^ε`` overflows floating point, so a mechanism's probabilities round to 0 or 1 and
what it would spend is unbounded (no privacy at all)."""


def check_epsilon(
    epsilon: float,
    most: float = MAX_EPSILON,
    mechanism: str | None = None,
    least: float = 0.0,
) -> float:
    """ε as a float: a number in ``(least, most]`` (see the module docstring).

    ``math.inf`` (no privacy) passes, for exact tests; every registered mechanism refuses
    it afterwards.
    """
    eps = float(epsilon)
    if math.isnan(eps) or eps <= 0.0:
        raise ConfigurationError(f"epsilon must be > 0, got {epsilon!r}")
    if math.isfinite(eps) and not least <= eps <= most:
        raise epsilon_out_of_range(eps, mechanism, most, least)
    return eps


def epsilon_out_of_range(
    epsilon: float, mechanism: str | None, most: float = MAX_EPSILON, least: float = 0.0
) -> ConfigurationError:
    """The refusal of an ε outside what ``mechanism`` takes (``None``: the limit of every
    mechanism), in the words of the rule."""
    takes = f"from {least:.3g} to {most:.6g}" if least > 0.0 else f"up to {most:.6g}"
    if mechanism is None:
        mechanism, takes = "no mechanism", f"above {most:.6g}"
    if epsilon > most:
        return ConfigurationError(
            f"ε = {epsilon:g} is too large: {mechanism} takes ε {takes}; above, floating"
            " point cannot represent its probabilities (what it would spend is unbounded,"
            " or its answers cannot be decoded); use a smaller ε"
        )
    return ConfigurationError(
        f"ε = {epsilon:g} is too small: {mechanism} takes ε {takes}; below, its"
        " probabilities under different values round to numbers 53-bit weights cannot"
        " tell apart; use a larger ε"
    )


def check_domain_size(d: int) -> int:
    if int(d) != d or d < 2:
        raise ConfigurationError(f"a domain needs at least 2 values, got {d!r}")
    return int(d)


def check_indices(values: ArrayLike, d: int) -> NDArray[np.int64]:
    """Value indices as an int64 vector, each in ``[0, d)``."""
    idx = np.asarray(values)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise InvalidRecordError("values must be a 1-d array of integer value indices")
    if idx.size and (idx.min() < 0 or idx.max() >= d):
        raise InvalidRecordError(f"value index outside the domain [0, {d})")
    return idx.astype(np.int64, copy=False)
