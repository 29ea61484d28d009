"""Privacy of a finite channel, computed here independently of ``ldp_shared.kernel``.

A channel ``M[y, x] = P(report y | value x)`` is ε-LDP when ``M[y, x] <= e^ε M[y, x']``
for every output ``y`` and pair of values ``x, x'``. "At the boundary from both sides":
a mechanism stated at ε satisfies ε-LDP (up to ``SLACK`` of rounding) and does not
satisfy (ε - ``BELOW``)-LDP, so the stated ε is neither loose nor violated.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

SLACK = 1e-12
BELOW = 1e-6


def max_log_ratio(channel: NDArray[np.float64]) -> float:
    """``max_y max_{x,x'} ln M[y,x] - ln M[y,x']`` by brute force over all pairs."""
    m = np.asarray(channel, dtype=np.float64)
    assert np.all(m > 0.0), "a channel with an impossible output has infinite ε"
    logs = np.log(m)
    return float(
        max(
            np.max(logs[:, a] - logs[:, b]) for a, b in itertools.permutations(range(m.shape[1]), 2)
        )
    )


def satisfies_ldp(channel: NDArray[np.float64], epsilon: float) -> bool:
    return max_log_ratio(channel) <= epsilon + SLACK


def assert_tight(channel: NDArray[np.float64], epsilon: float) -> None:
    """The channel is ε-LDP and not (ε - 1e-6)-LDP."""
    m = np.asarray(channel, dtype=np.float64)
    assert np.allclose(m.sum(axis=0), 1.0, rtol=0.0, atol=1e-12), "columns must be distributions"
    assert satisfies_ldp(m, epsilon)
    assert not satisfies_ldp(m, epsilon - BELOW)
