"""A faster client path, measured by the perturbation benchmark; NOT used by the product.

It shows what the profile's hot spots would cost if they were done differently, so the
owners of ``ldp_shared`` can judge a change with numbers. Same output format as
``Privatizer.privatize_columns`` for a one-attribute collection, same exact
probabilities:

* strings -> indices with ``np.fromiter(map(lookup.__getitem__, values))`` (no generator
  frame per value);
* UE's Bernoulli(q) bits drawn already packed, 64 lanes per ``uint64``: a lane is 1 when
  a uniform ``U`` (its random bits, most significant first) is below ``q``, decided bit
  by bit against the finite binary expansion of the double ``q``. Every lane still tied
  after a block of 8 bits draws 8 more, only for the words that hold a tied lane, so the
  result is Bernoulli(q) exactly (``q`` as a double), from ~1 random byte per bit,
  with no unpacked boolean matrix and no ``packbits``;
  For sparse rates (below ``kernel.GAP_SAMPLING_BELOW``) the product's gap sampling is
  kept (it draws only the ones) and the rows are packed with one flat ``packbits`` over
  rows padded to whole bytes instead of ``packbits(axis=1)``;
* the true bit is then written into the packed row as Bernoulli(p).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from ldp_shared.collection import CollectionConfig
from ldp_shared.kernel import GAP_SAMPLING_BELOW, bernoulli_flat_positions
from ldp_shared.mechanisms import GeneralizedRandomizedResponse

ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def rate_bits(rate: float) -> list[int]:
    """The finite binary expansion of the double ``rate`` in (0, 1), most significant first."""
    f = Fraction(rate)
    bits: list[int] = []
    while f:
        f *= 2
        bits.append(int(f >= 1))
        f -= bits[-1]
    return bits


def _compare(bits: list[int], raw: NDArray[np.uint64], eq: NDArray[np.uint64], lt) -> None:
    """Advance the lane-wise comparison ``U < rate`` over ``bits`` (in place)."""
    tmp = np.empty_like(eq)
    for b, u in zip(bits, raw, strict=True):
        np.invert(u, out=tmp)
        if b:  # U's bit 0 where the rate's is 1: U < rate for the lanes tied so far
            tmp &= eq
            lt |= tmp
            eq &= u
        else:
            eq &= tmp


def bernoulli_words(bits: list[int], words: int, gen: np.random.Generator) -> NDArray[np.uint64]:
    """``words`` uint64 words whose 64 lanes each are Bernoulli(rate), ``bits`` = rate_bits."""
    first = bits[:8]
    raw = gen.bit_generator.random_raw(len(first) * words).reshape(len(first), words)
    if first[0]:
        lt, eq = ~raw[0], raw[0].copy()
    else:
        lt, eq = np.zeros(words, dtype=np.uint64), ~raw[0]
    _compare(first[1:], raw[1:], eq, lt)
    active = np.flatnonzero(eq)
    eq = eq[active]
    level = len(first)
    while level < len(bits) and active.size:
        block = bits[level : level + 8]
        raw = gen.bit_generator.random_raw(len(block) * active.size).reshape(
            len(block), active.size
        )
        found = np.zeros(active.size, dtype=np.uint64)
        _compare(block, raw, eq, found)
        lt[active] |= found
        keep = eq != 0
        active, eq = active[keep], eq[keep]
        level += len(block)
    return lt


def bernoulli_packed(
    rate: float, rows: int, d: int, gen: np.random.Generator, bits: list[int] | None = None
) -> NDArray[np.uint8]:
    """``rows × ceil(d/8)`` bytes of i.i.d. Bernoulli(rate) bits (padding not cleared)."""
    nbytes = (d + 7) // 8
    words = (rows * nbytes + 7) // 8
    if min(rate, 1.0 - rate) < GAP_SAMPLING_BELOW:
        size = rows * nbytes * 8
        flat = np.zeros(size, dtype=np.bool_) if rate < 0.5 else np.ones(size, dtype=np.bool_)
        flat[bernoulli_flat_positions(min(rate, 1.0 - rate), size, gen)] = rate < 0.5
        return np.packbits(flat).reshape(rows, nbytes)
    if rate <= 0.5:
        lanes = bernoulli_words(bits or rate_bits(rate), words, gen)
    else:
        lanes = ~bernoulli_words(bits or rate_bits(1.0 - rate), words, gen)
    return lanes.view(np.uint8)[: rows * nbytes].reshape(rows, nbytes)


class PrototypePrivatizer:
    """One-attribute SUE/OUE/GRR collection: the prototype of a faster client path."""

    def __init__(self, config: CollectionConfig) -> None:
        if len(config.attributes) != 1:
            raise ValueError("the prototype handles one attribute")
        self.attribute = config.attributes[0]
        self.mechanism = config.randomizers[0]
        self.lookup = {v: i for i, v in enumerate(self.attribute.domain)}
        q = self.mechanism.q
        self.bits = rate_bits(q if q <= 0.5 else 1.0 - q)

    def privatize_columns(
        self, values: list[str], gen: np.random.Generator, chunk: int = 16_384
    ) -> NDArray[np.uint8]:
        idx = np.fromiter(map(self.lookup.__getitem__, values), dtype=np.int64, count=len(values))
        d = self.attribute.d
        mech = self.mechanism
        if isinstance(mech, GeneralizedRandomizedResponse):
            width = self.attribute.byte_length
            return mech.perturb(idx, gen).astype(f">u{width}").view(np.uint8).reshape(-1, width)
        n = idx.size
        nbytes = (d + 7) // 8
        out = np.empty((n, nbytes), dtype=np.uint8)
        pad_mask = np.uint8((0xFF << (8 * nbytes - d)) & 0xFF)
        for start in range(0, n, chunk):
            part = idx[start : start + chunk]
            rows = bernoulli_packed(mech.q, part.size, d, gen, self.bits)
            if pad_mask != 0xFF:
                rows[:, -1] &= pad_mask
            byte = part >> 3
            mask = (0x80 >> (part & 7)).astype(np.uint8)
            keep = gen.random(part.size) < mech.p
            r = np.arange(part.size)
            cell = rows[r, byte] & ~mask
            rows[r, byte] = np.where(keep, cell | mask, cell)
            out[start : start + part.size] = rows
        return out
