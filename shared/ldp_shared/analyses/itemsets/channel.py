"""The per-bit channel of MASK and the moments of its debiased bit.

MASK (S. Rizvi and J. Haritsa, "Maintaining Data Privacy in Association Rule Mining",
VLDB 2002, §3) keeps every bit of a basket's ``m``-bit vector with probability ``p`` and
flips it with ``1-p``. In general a true bit ``x`` is reported as ``y`` with
``P(y=1|x=1) = p`` and ``P(y=1|x=0) = q`` (MASK: ``q = 1-p``). The debiased bit
``z = (y-q)/(p-q) = a·y + b`` with ``a = 1/(p-q)`` and ``b = -q/(p-q)`` has ``E[z] = x``;
its second moments ``E[z² | x=0] = e0 = q(1-q)/(p-q)²`` and
``E[z² | x=1] = e1 = [p(1-q)² + (1-p)q²]/(p-q)²`` give the standard errors
(:mod:`.estimator`).

``BitChannel.exact()`` (``p = 1, q = 0``) is no noise at all: with it the miner is plain
Apriori, which is how the tests and the benchmarks compute the truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ldp_shared.errors import ConfigurationError


@dataclass(frozen=True)
class BitChannel:
    """The per-bit channel ``P(y=1|x=1) = p``, ``P(y=1|x=0) = q``, ``0 ≤ q < p ≤ 1``.

    MASK with keep probability ``p`` is ``BitChannel.mask(p)`` (``q = 1-p``);
    ``BitChannel.exact()`` (``p = 1, q = 0``) is no noise at all, for exact tests and for
    the truth an evaluation compares with.
    """

    p: float
    q: float

    def __post_init__(self) -> None:
        p, q = float(self.p), float(self.q)
        if not (math.isfinite(p) and math.isfinite(q) and 0.0 <= q < p <= 1.0):
            raise ConfigurationError(f"a bit channel needs 0 <= q < p <= 1, got p={p!r}, q={q!r}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "q", q)

    @classmethod
    def mask(cls, keep_probability: float) -> BitChannel:
        """MASK's channel: keep each bit with probability ``p`` in (0.5, 1), flip it otherwise."""
        kp = float(keep_probability)
        if not 0.5 < kp < 1.0:
            raise ConfigurationError(f"MASK keep probability p must lie in (0.5, 1), got {kp!r}")
        return cls(kp, 1.0 - kp)

    @classmethod
    def exact(cls) -> BitChannel:
        """No noise (``p = 1, q = 0``): the estimator becomes exact counting."""
        return cls(1.0, 0.0)

    @property
    def a(self) -> float:
        """Slope of the debiased bit ``z = a·y + b``: ``1/(p-q)``."""
        return 1.0 / (self.p - self.q)

    @property
    def b(self) -> float:
        """Offset of the debiased bit: ``-q/(p-q)``."""
        return -self.q / (self.p - self.q)

    @property
    def e0(self) -> float:
        """``E[z² | x=0] = q(1-q)/(p-q)²``."""
        return self.q * (1.0 - self.q) / (self.p - self.q) ** 2

    @property
    def e1(self) -> float:
        """``E[z² | x=1] = [p(1-q)² + (1-p)q²]/(p-q)²``."""
        return (self.p * (1.0 - self.q) ** 2 + (1.0 - self.p) * self.q**2) / (self.p - self.q) ** 2
