"""The stored form of a statistics row's vectors.

``sums`` (the int64 blocks of ``config.stats_length`` values) are stored as
little-endian signed integers of the narrowest width among 1, 2, 4 and 8 bytes that
holds every value; the blob's length divided by the vector's says which. A sketch of
``k·g`` counters (FLH, PEM: up to 2^20 of them) rewritten by every transaction then
costs one or two bytes a counter while its counts are small, instead of eight: a
transaction's write-ahead log holds the blob it rewrote, so this is most of what a
batch of reports costs such a collection. Rows written as int64 before read as they
are.

``float_sums`` (the float64 blocks) are stored as little-endian float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import CorruptStatisticsError

__all__ = ["decode_floats", "decode_sums", "encode_floats", "encode_sums"]

SUMS_WIDTHS = {dtype.itemsize: dtype for dtype in map(np.dtype, ("<i1", "<i2", "<i4", "<i8"))}
"""The stored integer types of ``sums``, by their width in bytes."""
FLOATS_DTYPE = np.dtype("<f8")


def encode_sums(sums: NDArray[np.int64]) -> bytes:
    """The stored form of the sums: the narrowest little-endian signed integers that
    hold them all."""
    array = np.ascontiguousarray(sums, dtype=np.int64)
    if array.size == 0:
        return b""
    low, high = int(array.min()), int(array.max())
    for dtype in SUMS_WIDTHS.values():
        bounds = np.iinfo(dtype)
        if bounds.min <= low and high <= bounds.max:
            return array.astype(dtype).tobytes()
    raise AssertionError("int64 holds every int64")  # pragma: no cover


def decode_sums(blob: bytes, length: int) -> NDArray[np.int64]:
    """Inverse of :func:`encode_sums` (an empty blob is all zero), checking the length."""
    if not blob:
        return np.zeros(length, dtype=np.int64)
    width, rest = divmod(len(blob), length) if length else (0, len(blob))
    if rest or width not in SUMS_WIDTHS:
        raise CorruptStatisticsError(
            f"statistics hold {len(blob)} bytes, not 1, 2, 4 or 8 for each of {length} values"
        )
    return np.frombuffer(blob, dtype=SUMS_WIDTHS[width]).astype(np.int64)


def encode_floats(floats: NDArray[np.float64]) -> bytes:
    """The stored form of the float sums: little-endian float64."""
    return np.ascontiguousarray(floats, dtype=FLOATS_DTYPE).tobytes()


def decode_floats(blob: bytes | None, length: int) -> NDArray[np.float64]:
    """Inverse of :func:`encode_floats` (``None``, from a row older than the column, and
    an empty blob are all zero), checking the length."""
    data = b"" if blob is None else bytes(blob)
    if not data:
        return np.zeros(length, dtype=np.float64)
    if len(data) != length * FLOATS_DTYPE.itemsize:
        raise CorruptStatisticsError(
            f"float statistics hold {len(data)} bytes, expected {length * FLOATS_DTYPE.itemsize}"
        )
    return np.frombuffer(data, dtype=FLOATS_DTYPE).astype(np.float64)
