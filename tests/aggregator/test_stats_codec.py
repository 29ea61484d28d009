"""The stored form of statistics: sums in the narrowest integer width, read back exactly,
and rows written as int64 before still read."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_aggregator.storage.stats_codec import (
    decode_floats,
    decode_sums,
    encode_floats,
    encode_sums,
)
from ldp_shared.errors import CorruptStatisticsError


@pytest.mark.parametrize(
    ("low", "high", "width"),
    [
        (0, 127, 1),
        (-128, 0, 1),
        (0, 128, 2),
        (-129, 5, 2),
        (0, 2**15 - 1, 2),
        (0, 2**15, 4),
        (-(2**31), 2**31 - 1, 4),
        (0, 2**31, 8),
        (-(2**63), 2**63 - 1, 8),
    ],
)
def test_sums_take_the_narrowest_width_and_read_back_exactly(
    low: int, high: int, width: int
) -> None:
    sums = np.array([low, 0, 1, high, low], dtype=np.int64)
    blob = encode_sums(sums)
    assert len(blob) == width * sums.size
    assert np.array_equal(decode_sums(blob, sums.size), sums)
    assert decode_sums(blob, sums.size).dtype == np.int64


def test_sums_are_little_endian_and_rows_written_as_int64_read_as_before() -> None:
    assert encode_sums(np.array([1, -2, 300], dtype=np.int64)) == b"\x01\x00\xfe\xff\x2c\x01"
    old = np.array([0, 1, -2, 2**40], dtype="<i8").tobytes()  # every row before narrow widths
    assert np.array_equal(decode_sums(old, 4), [0, 1, -2, 2**40])
    small = np.array([3, 4], dtype="<i8").tobytes()
    assert np.array_equal(decode_sums(small, 2), [3, 4])


def test_empty_vectors_and_corrupt_lengths() -> None:
    assert encode_sums(np.zeros(0, dtype=np.int64)) == b""
    assert np.array_equal(decode_sums(b"", 3), [0, 0, 0])
    for blob, length in ((bytes(12), 4), (bytes(5), 4), (bytes(48), 4), (bytes(3), 0)):
        with pytest.raises(CorruptStatisticsError, match="not 1, 2, 4 or 8"):
            decode_sums(blob, length)


def test_floats_round_trip_and_check_their_length() -> None:
    floats = np.array([0.5, -1e300, 3.25])
    assert np.array_equal(decode_floats(encode_floats(floats), 3), floats)
    assert np.array_equal(decode_floats(None, 2), [0.0, 0.0])
    with pytest.raises(CorruptStatisticsError):
        decode_floats(encode_floats(floats), 2)
