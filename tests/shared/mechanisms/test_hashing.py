"""The public hash family of ``flh``, pinned byte for byte.

A client written in another language must reproduce keys and buckets exactly, so the
family is checked here against a second implementation written from the specification
alone (the docstring of :mod:`ldp_shared.mechanisms.hashing`): Python integers masked to
64 bits and :func:`hashlib.blake2b`, no numpy. A few literal numbers (salt ``"00"*16``,
the string ``"hello"``, and the first outputs of SplitMix64 seeded with 0 as published)
make any change of the family fail loudly, even one made to both implementations.
"""

from __future__ import annotations

import hashlib
import itertools
import unicodedata
from typing import Any

import numpy as np
import pytest

from ldp_shared.errors import InvalidRecordError
from ldp_shared.mechanisms.hashing import (
    SALT_PATTERN,
    bucket_of,
    buckets,
    hash_keys,
    new_salt,
    normalize_string,
    value_bytes,
)

MASK64 = (1 << 64) - 1
ZERO_SALT = "00" * 16
SALTS = [
    ZERO_SALT,
    "ff" * 16,
    "0123456789abcdef" * 2,
    "5a17c0ffee5a17c0ffee5a17c0ffee00",
]
STRINGS = [
    "hello",
    "Hello",
    "hello ",
    "7",
    "a,b\\c",
    "Grüße",
    "日本語のテキスト",
    "emoji 🎉 ok",
    "é",  # U+00E9, already NFC
    "x" * 64,  # exactly the default max_length
    "\ufb01le",  # the ligature ﬁ: NFC keeps it (NFKC would make it "fi")
    "file",
    "\uff21\u2460",  # fullwidth A, circled one: kept as they are
]
NFD_TO_NFC = [
    ("e\u0301", "\u00e9"),  # e + combining acute → é
    ("\u212b", "\u00c5"),  # ANGSTROM SIGN → Å
    ("Gru\u0308\u00dfe", "Grüße"),  # u + combining diaeresis
    ("\u1100\u1161", "\uac00"),  # Hangul jamo → syllable
]
INTEGERS = [0, 1, 7, 255, 256, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
JS = [0, 1, 65535]
GS = [2, 56, 256]


# -- the reference implementation, from the specification only --------------------------


def ref_string_bytes(value: str) -> bytes:
    return b"s" + unicodedata.normalize("NFC", value).encode("utf-8")


def ref_integer_bytes(value: int) -> bytes:
    assert 0 <= value <= MASK64
    return b"i" + bytes((value >> shift) & 0xFF for shift in range(56, -8, -8))


def ref_key(data: bytes, salt: str) -> int:
    digest = hashlib.blake2b(data, digest_size=8, key=bytes.fromhex(salt)).digest()
    out = 0
    for byte in digest:  # unsigned big-endian
        out = (out << 8) | byte
    return out


def ref_bucket(key: int, j: int, g: int) -> int:
    z = (key + (j + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z = z ^ (z >> 31)
    return ((z >> 32) * g) >> 32


def keys_of(values: list[Any], salt: str, value_type: str = "string") -> list[int]:
    out = hash_keys(values, salt, value_type, 64, "attribute 'w'")  # type: ignore[arg-type]
    assert out.dtype == np.uint64 and out.shape == (len(values),)
    return [int(v) for v in out]


# -- literal golden values -----------------------------------------------------------------

HELLO_KEY = 0x9877CD1C0291A9CA
"""BLAKE2b-64 of ``b"shello"`` keyed with 16 zero bytes."""
HELLO_BUCKETS = {  # (j, g) → h_j(key of "hello")
    (0, 2): 1,
    (0, 56): 37,
    (0, 256): 172,
    (1, 2): 0,
    (1, 56): 12,
    (1, 256): 58,
    (65535, 2): 0,
    (65535, 56): 24,
    (65535, 256): 109,
}
INTEGER_KEYS = {0: 0xEDB1CFB030E04D51, 7: 0xB3244923CEB588AE, 2**64 - 1: 0x9FD608EA9815E7B3}
STRING_SEVEN_KEY = 0x0FF65AB3513EA60D
SPLITMIX64_SEED0 = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
"""The first outputs of SplitMix64 seeded with 0 (Steele, Lea and Flood 2014; the
reference ``splitmix64.c``): ``h_j`` of key 0 is output ``j + 1``."""


def test_literal_key_and_buckets_of_hello() -> None:
    assert value_bytes("hello", "string", 64, "w") == b"shello"
    assert keys_of(["hello"], ZERO_SALT) == [HELLO_KEY]
    assert ref_key(b"shello", ZERO_SALT) == HELLO_KEY
    for (j, g), expected in HELLO_BUCKETS.items():
        got = buckets(np.array([HELLO_KEY], dtype=np.uint64), np.array([j]), g)
        assert got.tolist() == [expected], (j, g)
        assert ref_bucket(HELLO_KEY, j, g) == expected


def test_literal_integer_keys_and_the_type_tag() -> None:
    assert value_bytes(7, "integer", 64, "w") == b"i\x00\x00\x00\x00\x00\x00\x00\x07"
    assert value_bytes(2**64 - 1, "integer", 64, "w") == b"i" + b"\xff" * 8
    assert value_bytes("7", "string", 64, "w") == b"s7"
    for value, expected in INTEGER_KEYS.items():
        assert keys_of([value], ZERO_SALT, "integer") == [expected]
    # the tag keeps the string "7" and the integer 7 apart
    assert keys_of(["7"], ZERO_SALT) == [STRING_SEVEN_KEY] != [INTEGER_KEYS[7]]


DOCUMENTED = [  # docs/wire-format.md, "Hashed values": salt "00"*16
    # (value, value_type, key, h_0 at g = 56, h_1 at g = 56, h_65535 at g = 256)
    ("hello", "string", 0x9877CD1C0291A9CA, 37, 12, 109),
    ("caf\u00e9", "string", 0x5833E6511BC994F6, 19, 7, 234),
    ("cafe\u0301", "string", 0x5833E6511BC994F6, 19, 7, 234),
    (7, "integer", 0xB3244923CEB588AE, 54, 2, 226),
]


@pytest.mark.parametrize(("value", "value_type", "key", "h0", "h1", "h65535"), DOCUMENTED)
def test_the_documented_worked_examples(
    value: Any, value_type: str, key: int, h0: int, h1: int, h65535: int
) -> None:
    assert keys_of([value], ZERO_SALT, value_type) == [key]
    x = np.array([key], dtype=np.uint64)
    got = [buckets(x, np.array([j]), g)[0] for j, g in ((0, 56), (1, 56), (65535, 256))]
    assert got == [h0, h1, h65535]
    assert [ref_bucket(key, 0, 56), ref_bucket(key, 1, 56), ref_bucket(key, 65535, 256)] == got


def test_the_mixer_is_splitmix64() -> None:
    """Key 0 offset by ``j + 1`` golden-ratio steps is SplitMix64's state after ``j + 1``
    steps from seed 0: with ``g = 2^32`` the bucket is the top half of its output."""
    top = buckets(np.zeros(3, dtype=np.uint64), np.arange(3), 2**32)
    assert top.tolist() == [v >> 32 for v in SPLITMIX64_SEED0]
    assert [ref_bucket(0, j, 2**32) for j in range(3)] == [v >> 32 for v in SPLITMIX64_SEED0]


# -- the numpy implementation against the reference ---------------------------------------


@pytest.mark.parametrize("salt", SALTS)
def test_string_keys_match_the_reference(salt: str) -> None:
    expected = [ref_key(ref_string_bytes(s), salt) for s in STRINGS]
    assert keys_of(STRINGS, salt) == expected
    assert len(set(expected)) == len(STRINGS)  # distinct strings, distinct keys here


@pytest.mark.parametrize("salt", SALTS)
def test_nfd_input_hashes_as_its_nfc_form(salt: str) -> None:
    for nfd, nfc in NFD_TO_NFC:
        assert nfd != nfc and normalize_string(nfd) == nfc
        assert value_bytes(nfd, "string", 64, "w") == b"s" + nfc.encode("utf-8")
        expected = [ref_key(ref_string_bytes(nfc), salt)]
        assert keys_of([nfd], salt) == keys_of([nfc], salt) == expected
        # and not as its own bytes
        raw = ref_key(b"s" + nfd.encode("utf-8"), salt)
        assert keys_of([nfd], salt) != [raw]


@pytest.mark.parametrize("salt", SALTS)
def test_integer_keys_match_the_reference(salt: str) -> None:
    expected = [ref_key(ref_integer_bytes(x), salt) for x in INTEGERS]
    assert keys_of(INTEGERS, salt, "integer") == expected
    # numpy integers are the same values
    as_numpy = [np.uint64(2**64 - 1), np.int64(7), np.uint8(0)]
    assert keys_of(as_numpy, salt, "integer") == [
        ref_key(ref_integer_bytes(x), salt) for x in (2**64 - 1, 7, 0)
    ]
    assert keys_of(np.array(INTEGERS, dtype=np.uint64), salt, "integer") == expected  # type: ignore[arg-type]


def test_nothing_but_nfc_is_normalised() -> None:
    """Case, spaces and compatibility forms are kept: only canonical equivalence merges."""
    assert value_bytes("\ufb01le", "string", 64, "w") == b"s\xef\xac\x81le"
    for a, b in [("\ufb01le", "file"), ("\uff21", "A"), ("Hello", "hello"), ("a ", "a")]:
        assert keys_of([a], ZERO_SALT) != keys_of([b], ZERO_SALT), (a, b)


def test_salts_hash_independently() -> None:
    keys = [keys_of(STRINGS, salt) for salt in SALTS]
    for a, b in itertools.combinations(keys, 2):
        assert all(x != y for x, y in zip(a, b, strict=True))


def test_utf8_bytes_are_the_string() -> None:
    assert keys_of([b"hello", bytearray("Grüße".encode())], ZERO_SALT) == keys_of(
        ["hello", "Grüße"], ZERO_SALT
    )


@pytest.mark.parametrize("salt", SALTS)
@pytest.mark.parametrize("g", GS)
def test_buckets_match_the_reference(salt: str, g: int) -> None:
    keys = keys_of(STRINGS, salt) + keys_of(INTEGERS, salt, "integer") + [0, 1, MASK64]
    key_array = np.array(keys, dtype=np.uint64)
    # j as a column, a scalar, and broadcast against the keys
    table = buckets(key_array[:, None], np.array(JS)[None, :], g)
    assert table.dtype == np.int64 and table.shape == (len(keys), len(JS))
    expected = [[ref_bucket(x, j, g) for j in JS] for x in keys]
    assert table.tolist() == expected
    for col, j in enumerate(JS):
        assert buckets(key_array, np.asarray(j), g).tolist() == [row[col] for row in expected]
    assert table.min() >= 0 and table.max() < g
    assert [[bucket_of(x, j, g) for j in JS] for x in keys] == expected  # one record's path


def test_every_bucket_is_reached_about_equally() -> None:
    """Lemire's reduction of 32 uniform bits: 56 buckets over 56,000 (key, j) pairs are
    within a few standard deviations of 1,000 each (a family that dropped the reduction
    or mixed badly would pile into a few)."""
    keys = keys_of([f"v{i}" for i in range(1000)], ZERO_SALT)
    table = buckets(np.array(keys, dtype=np.uint64)[:, None], np.arange(56)[None, :], 56)
    counts = np.bincount(table.ravel(), minlength=56)
    assert counts.size == 56 and np.all(np.abs(counts - 1000) < 6 * np.sqrt(1000))


def test_new_salt_is_16_random_bytes_in_hex() -> None:
    import re

    salts = {new_salt() for _ in range(20)}
    assert len(salts) == 20
    assert all(re.fullmatch(SALT_PATTERN, s) for s in salts)


# -- values the family refuses ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x" * 65, "is 65 bytes of UTF-8, over the maximum of 64"),
        ("é" * 33, "is 66 bytes of UTF-8, over the maximum of 64"),
        ("\ud800", "not valid Unicode"),
        ("ok\udfffok", "lone surrogate"),
        (b"\xff", "not valid UTF-8"),
        (b"ab\xc3", "not valid UTF-8"),
        ("", "the empty string is not a value"),
        (b"", "the empty string is not a value"),
        (5, "expected a string, got int"),
        (None, "expected a string, got NoneType"),
        (["a"], "expected a string, got list"),
    ],
)
def test_bad_strings(value: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message) as caught:
        hash_keys(["fine", value], ZERO_SALT, "string", 64, "attribute 'word'")
    assert caught.value.detail.startswith("attribute 'word': ")
    assert "\n" not in caught.value.detail and len(caught.value.detail) < 200


def test_length_is_counted_in_nfc_bytes() -> None:
    nfd = "e\u0301" * 32  # 96 bytes as given, 64 after NFC
    assert len(nfd.encode("utf-8")) == 96
    assert keys_of([nfd], ZERO_SALT) == keys_of(["é" * 32], ZERO_SALT)
    assert hash_keys(["abc"], ZERO_SALT, "string", 3, "w").size == 1
    with pytest.raises(InvalidRecordError, match="is 4 bytes of UTF-8, over the maximum of 3"):
        hash_keys(["abcd"], ZERO_SALT, "string", 3, "w")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, r"-1 is outside \[0, 2\^64\)"),
        (2**64, r"18446744073709551616 is outside \[0, 2\^64\)"),
        (np.int64(-5), r"-5 is outside \[0, 2\^64\)"),
        (True, "expected an integer, got bool"),
        (False, "expected an integer, got bool"),
        (1.0, "expected an integer, got float"),
        ("7", "expected an integer, got str"),
        (None, "expected an integer, got NoneType"),
    ],
)
def test_bad_integers(value: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message) as caught:
        hash_keys([0, value], ZERO_SALT, "integer", 64, "attribute 'n'")
    assert caught.value.detail.startswith("attribute 'n': ")
