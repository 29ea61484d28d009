"""Random sources for perturbation.

Every perturbing function takes a :class:`numpy.random.Generator`. The default,
:func:`secure_rng`, is AES-128 in counter mode (``randomgen.AESCounter``) keyed with
128 bits from the operating system's CSPRNG (:mod:`secrets`): a cryptographically
strong stream, so an observer of many reports cannot predict the noise of the next
one, and as fast as numpy's PCG64. Tests pass :func:`seeded_rng` for repeatability.
"""

from __future__ import annotations

import secrets

import numpy as np
from randomgen import AESCounter


def secure_rng() -> np.random.Generator:
    """A generator over AES-CTR keyed from the OS CSPRNG (the default everywhere)."""
    return np.random.Generator(AESCounter(key=secrets.randbits(128)))


def seeded_rng(seed: int) -> np.random.Generator:
    """A reproducible generator for tests and simulations (never for real clients)."""
    return np.random.Generator(np.random.PCG64(seed))


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself, or a fresh secure generator when none is given."""
    return secure_rng() if rng is None else rng
