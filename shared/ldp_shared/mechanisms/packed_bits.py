"""Bernoulli bits drawn already packed, as unary encoding sends them (``bits`` segments).

:func:`bernoulli_rows` gives ``n`` rows of ``d`` i.i.d. Bernoulli(``rate``) bits packed
most significant bit first into ``ceil(d/8)`` bytes (padding bits zero): the bytes
``pack_rows(kernel.bernoulli_matrix(rate, n, d))`` would hold, without the ``n × d``
boolean matrix.

Dense rates (within ``[1/32, 31/32]``) compare uniform random bits with the rate's
binary expansion, 64 bits at a time in the lanes of a ``uint64`` (bit slicing). A lane
holds ``U = 0.u₁u₂u₃…``, its bits drawn one level at a time; it is decided at the first
level ``i`` where ``uᵢ`` differs from the rate's bit ``bᵢ``: 1 when ``uᵢ = 0 < bᵢ = 1``
(``U < rate``), 0 otherwise. A double has a finite expansion, and a lane still tied
after its last bit has ``U ≥ rate``: 0. So each bit is 1 with probability exactly
``rate`` (the double), independently of every other. The first :data:`FIRST_LEVELS`
levels are drawn for every word; later levels only for the words that still hold a tied
lane (``1 − (1 − 2⁻⁸)⁶⁴ ≈ 22 %`` after 8 levels, halving the tied lanes each level).
That is about one random byte per bit and no per-bit branch.

Sparse rates keep :func:`ldp_shared.kernel.bernoulli_matrix`'s gap sampling (only the
minority bits are drawn), packed with one flat ``packbits``.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from ldp_shared.kernel import GAP_SAMPLING_BELOW, bernoulli_matrix
from ldp_shared.mechanisms.categorical import pack_rows

__all__ = ["FIRST_LEVELS", "bernoulli_rows", "bernoulli_words", "rate_bits", "set_bits"]

FIRST_LEVELS = 8
"""Levels drawn for every word before only the words with tied lanes go on."""


@functools.lru_cache(maxsize=256)
def rate_bits(rate: float) -> tuple[int, ...]:
    """The finite binary expansion of the double ``rate`` in (0, 1), most significant first."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"rate must lie in (0, 1), got {rate!r}")
    f = Fraction(rate)
    bits: list[int] = []
    while f:
        f *= 2
        bits.append(int(f >= 1))
        f -= bits[-1]
    return tuple(bits)


def _compare(
    bits: tuple[int, ...],
    raw: NDArray[np.uint64],
    tied: NDArray[np.uint64],
    ones: NDArray[np.uint64],
) -> None:
    """Advance the lane-wise comparison ``U < rate`` by ``len(bits)`` levels, in place.

    ``raw[i]`` holds every word's lane bits of level ``i``; ``tied`` the lanes equal to
    the rate so far, ``ones`` the lanes decided 1.
    """
    scratch = np.empty_like(tied)
    for bit, level in zip(bits, raw, strict=True):
        np.invert(level, out=scratch)  # lanes whose bit is 0
        if bit:  # a 0 under the rate's 1: below the rate, decided 1
            scratch &= tied
            ones |= scratch
            tied &= level
        else:  # a 1 over the rate's 0: above it, decided 0
            tied &= scratch


def bernoulli_words(rate: float, words: int, rng: np.random.Generator) -> NDArray[np.uint64]:
    """``words`` uint64 words whose 64 lanes are i.i.d. Bernoulli(``rate``), exactly."""
    bits = rate_bits(rate)
    first = bits[:FIRST_LEVELS]
    raw = rng.bit_generator.random_raw(len(first) * words).reshape(len(first), words)
    ones = np.zeros(words, dtype=np.uint64)
    tied = np.full(words, np.uint64(0xFFFF_FFFF_FFFF_FFFF))
    _compare(first, raw, tied, ones)
    active = np.flatnonzero(tied)
    tied = tied[active]
    level = len(first)
    while level < len(bits) and active.size:
        block = bits[level : level + FIRST_LEVELS]
        raw = rng.bit_generator.random_raw(len(block) * active.size).reshape(
            len(block), active.size
        )
        found = np.zeros(active.size, dtype=np.uint64)
        _compare(block, raw, tied, found)
        ones[active] |= found
        still = tied != 0
        active, tied = active[still], tied[still]
        level += len(block)
    return ones


def bernoulli_rows(rate: float, n: int, d: int, rng: np.random.Generator) -> NDArray[np.uint8]:
    """``n`` rows of ``d`` i.i.d. Bernoulli(``rate``) bits, packed (``n × ceil(d/8)``)."""
    width = (d + 7) // 8
    if not GAP_SAMPLING_BELOW <= rate <= 1.0 - GAP_SAMPLING_BELOW:
        return pack_rows(bernoulli_matrix(rate, n, d, rng))
    size = n * width
    if rate <= 0.5:
        lanes = bernoulli_words(rate, (size + 7) // 8, rng)
    else:
        lanes = ~bernoulli_words(1.0 - rate, (size + 7) // 8, rng)
    out = lanes.view(np.uint8)[:size].reshape(n, width)
    if d != 8 * width:  # padding bits are zero
        out[:, -1] &= np.uint8((0xFF << (8 * width - d)) & 0xFF)
    return out


def set_bits(rows: NDArray[np.uint8], cells: NDArray[np.int64], values: NDArray[np.bool_]) -> None:
    """Set bit ``cells[i]`` of packed row ``i`` to ``values[i]`` (most significant first)."""
    at = np.arange(rows.shape[0])
    byte = cells >> 3
    mask = (0x80 >> (cells & 7)).astype(np.uint8)
    cleared = rows[at, byte] & ~mask
    rows[at, byte] = cleared | (mask * values.astype(np.uint8))
