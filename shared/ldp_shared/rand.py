"""Random sources for perturbation.

Every perturbing function takes a :class:`numpy.random.Generator`. The default is the
process's secure generator (:func:`shared_secure_rng`): AES-128 in counter mode
(``randomgen.AESCounter``) keyed with 128 bits from the operating system's CSPRNG
(:mod:`secrets`), a cryptographically strong stream, so an observer of many reports
cannot predict the noise of the next one, and as fast as numpy's PCG64. It is keyed once
per process (keying costs more than perturbing one record) and keyed anew in a child
after ``fork``, so that two processes never draw the same noise. Tests pass
:func:`seeded_rng` for repeatability.
"""

from __future__ import annotations

import os
import secrets
import threading

import numpy as np
from randomgen import AESCounter

__all__ = ["resolve_rng", "secure_rng", "seeded_rng", "shared_secure_rng"]

_shared: np.random.Generator | None = None
_lock = threading.Lock()


def secure_rng() -> np.random.Generator:
    """A new generator over AES-CTR keyed from the OS CSPRNG."""
    return np.random.Generator(AESCounter(key=secrets.randbits(128)))


def shared_secure_rng() -> np.random.Generator:
    """The process's secure generator (the default everywhere), keyed on first use.

    Thread-safe: numpy serialises draws from one bit generator with its lock.
    """
    global _shared
    gen = _shared
    if gen is None:
        with _lock:
            if _shared is None:
                _shared = secure_rng()
            gen = _shared
    return gen


def _forget_after_fork() -> None:
    """A forked child must not replay its parent's stream: it keys its own."""
    global _shared
    _shared = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def seeded_rng(seed: int) -> np.random.Generator:
    """A reproducible generator for tests and simulations (never for real clients)."""
    return np.random.Generator(np.random.PCG64(seed))


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself, or the process's secure generator when none is given."""
    return shared_secure_rng() if rng is None else rng
