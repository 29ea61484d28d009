"""Packed basket bits read chunk by chunk, and the bit-level helpers of counting.

A basket over ``m`` items is an ``m``-bit vector (MASK, Rizvi and Haritsa, VLDB 2002),
packed in numpy's ``packbits`` order as on the wire. :class:`PackedSource` is anything
that yields those rows in chunks more than once (an in-memory :class:`PackedBits`, or
the aggregator's spool of reports); :func:`column_sums` gives the per-item counts of
set bits (the sufficient statistics, level 1 of the miner). The private helpers pick
0/1 columns out of a packed chunk, pack columns into uint64 bitsets and count their
set bits (:mod:`.counting`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import InvalidQueryError

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
ByteMatrix = NDArray[np.uint8]

DEFAULT_CHUNK_ROWS = 65_536
"""Rows of packed bits per chunk of :class:`PackedBits` (below 2^24: float32 counts stay exact)."""


class PackedSource(Protocol):
    """Packed basket bits that can be read more than once, chunk by chunk.

    Each chunk is a ``rows × row_bytes`` uint8 matrix; bit ``j`` of a row (item ``j``)
    is bit ``7 - j mod 8`` of byte ``j // 8`` (numpy's ``packbits`` order, the wire
    format's). Every call of :meth:`chunks` must yield the same ``n_rows`` rows.
    """

    @property
    def n_rows(self) -> int: ...

    @property
    def row_bytes(self) -> int: ...

    def chunks(self) -> Iterable[ByteMatrix]: ...


@dataclass(frozen=True, eq=False)
class PackedBits:
    """An in-memory ``n × row_bytes`` matrix of packed bits, read in chunks."""

    data: ByteMatrix
    chunk_rows: int = DEFAULT_CHUNK_ROWS

    def __post_init__(self) -> None:
        data = np.asarray(self.data)
        if data.dtype != np.uint8 or data.ndim != 2:
            raise InvalidQueryError("packed bits must be a 2-d uint8 matrix")
        if self.chunk_rows < 1:
            raise InvalidQueryError("chunk_rows must be at least 1")
        object.__setattr__(self, "data", data)

    @classmethod
    def from_bool(cls, matrix: NDArray[Any], chunk_rows: int = DEFAULT_CHUNK_ROWS) -> PackedBits:
        """Pack an ``n × m`` 0/1 matrix (rows are baskets, columns items)."""
        m = np.asarray(matrix)
        if m.ndim != 2:
            raise InvalidQueryError("baskets must be an n x m matrix")
        return cls(np.packbits(m.astype(bool, copy=False), axis=1), chunk_rows)

    @property
    def n_rows(self) -> int:
        return int(self.data.shape[0])

    @property
    def row_bytes(self) -> int:
        return int(self.data.shape[1])

    def chunks(self) -> Iterator[ByteMatrix]:
        for start in range(0, self.n_rows, self.chunk_rows):
            yield self.data[start : start + self.chunk_rows]


_BIT_TABLE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)
"""``_BIT_TABLE[v, i]``: bit ``i`` (most significant first) of the byte value ``v``."""


def column_sums(source: PackedSource, n_items: int) -> tuple[int, IntArray]:
    """``(n, S)``: the number of rows and the per-item number of set bits.

    Unpacks 255 rows at a time and adds them in uint8 (255 ones cannot overflow it),
    then into int64: one pass over the bits, no per-bit Python work.
    """
    width = source.row_bytes
    if n_items > 8 * width:
        raise InvalidQueryError(f"{n_items} items do not fit in {width} bytes per row")
    sums = np.zeros(8 * width, dtype=np.int64)
    n = 0
    for chunk in source.chunks():
        n += chunk.shape[0]
        for start in range(0, chunk.shape[0], 255):
            bits = np.unpackbits(chunk[start : start + 255], axis=1)
            sums += np.add.reduce(bits, axis=0, dtype=np.uint8)
    return n, sums[:n_items]


def _columns(chunk: ByteMatrix, items: IntArray) -> ByteMatrix:
    """The 0/1 columns ``items`` (sorted, distinct) of a packed chunk, ``rows × len(items)``."""
    byte_index = items >> 3
    unique_bytes, inverse = np.unique(byte_index, return_inverse=True)
    bits = np.unpackbits(np.ascontiguousarray(chunk[:, unique_bytes]), axis=1)
    selected: ByteMatrix = bits[:, inverse * 8 + (items & 7)]
    return selected


if hasattr(np, "bitwise_count"):

    def _popcount_rows(words: NDArray[np.uint64]) -> IntArray:
        counts: IntArray = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
        return counts

else:  # pragma: no cover - numpy < 2.0
    _POP8 = _BIT_TABLE.sum(axis=1).astype(np.uint8)

    def _popcount_rows(words: NDArray[np.uint64]) -> IntArray:
        as_bytes = words.view(np.uint8).reshape(words.shape[0], -1)
        counts: IntArray = _POP8[as_bytes].sum(axis=1, dtype=np.int64)
        return counts


def _bitsets(columns: ByteMatrix) -> NDArray[np.uint64]:
    """Column bitsets: row ``i`` of the result packs column ``i`` of a 0/1 matrix."""
    packed = np.packbits(columns, axis=0)  # ceil(r/8) × c, rows packed per column
    pad = (-packed.shape[0]) % 8
    if pad:
        packed = np.concatenate([packed, np.zeros((pad, packed.shape[1]), np.uint8)], axis=0)
    words: NDArray[np.uint64] = np.ascontiguousarray(packed.T).view(np.uint64)
    return words
