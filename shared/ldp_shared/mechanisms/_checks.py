"""Parameter checks shared by the mechanism specs."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError


def check_epsilon(epsilon: float) -> float:
    """ε must be a positive number; ``math.inf`` (no privacy) is allowed for exact tests."""
    eps = float(epsilon)
    if math.isnan(eps) or eps <= 0.0:
        raise ConfigurationError(f"epsilon must be > 0, got {epsilon!r}")
    return eps


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
