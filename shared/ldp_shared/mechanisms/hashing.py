"""The public hash family of the hashed mechanisms (``flh``): values nobody listed become
64-bit keys, and keys become buckets, the same in every language.

Specified byte for byte in ``docs/wire-format.md`` ("Hashed values"), so that a client
written elsewhere reproduces it; it uses neither Python's ``hash()`` nor anything a numpy
version could change:

1. **Value bytes.** A string is normalised to Unicode NFC (nothing else: case, spaces and
   punctuation are kept) and encoded as UTF-8, then prefixed with the byte ``0x73``
   (``s``). An integer ``0 <= x < 2^64`` is ``0x69`` (``i``) followed by its 8 bytes,
   big-endian. The tag keeps the string ``"7"`` and the integer 7 apart.
2. **Key.** ``x = BLAKE2b(value bytes, key = salt, digest_size = 8)`` (RFC 7693, the
   keyed mode), read as an unsigned big-endian 64-bit integer. The salt is the
   attribute's public 16-byte ``salt``: two collections hash independently.
3. **Bucket of hash function j** (``0 <= j < k``) among ``g``::

       z = x + (j + 1) · 0x9E3779B97F4A7C15           (mod 2^64)
       z = (z XOR (z >> 30)) · 0xBF58476D1CE4E5B9      (mod 2^64)
       z = (z XOR (z >> 27)) · 0x94D049BB133111EB      (mod 2^64)
       z =  z XOR (z >> 31)
       h_j(x) = ((z >> 32) · g) >> 32

   the SplitMix64 finaliser (Steele, Lea and Flood, OOPSLA 2014) over the key offset by
   ``j + 1`` steps of the golden-ratio increment, and Lemire's multiply-shift range
   reduction (2019) of its top 32 bits; the buckets' sizes differ by at most one part in
   ``2^32 / g``.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import InvalidRecordError

ValueType = Literal["string", "integer"]

STRING_TAG = b"s"
INTEGER_TAG = b"i"
SALT_BYTES = 16
SALT_PATTERN = r"^[0-9a-f]{32}$"
MAX_STRING_BYTES = 1024
"""Largest ``max_length`` an attribute may declare: bytes of UTF-8 after NFC."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_U64 = 2**64


def new_salt() -> str:
    """A fresh public salt (hex), drawn from the operating system's secure source."""
    return secrets.token_hex(SALT_BYTES)


def normalize_string(value: str) -> str:
    """The form that is hashed: Unicode NFC, nothing else."""
    return unicodedata.normalize("NFC", value)


def _string_bytes(value: Any, max_length: int, what: str) -> bytes:
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidRecordError(
                f"{what}: {bytes(value)[:20]!r}… is not valid UTF-8 ({error.reason})"
            ) from None
    if not isinstance(value, str):
        raise InvalidRecordError(f"{what}: expected a string, got {type(value).__name__}")
    if not value:
        raise InvalidRecordError(f"{what}: the empty string is not a value")
    try:  # ASCII is its own NFC
        data = value.encode() if value.isascii() else normalize_string(value).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRecordError(
            f"{what}: {value[:20]!r} is not valid Unicode (it holds a lone surrogate)"
        ) from None
    if len(data) > max_length:
        raise InvalidRecordError(
            f"{what}: {value[:20]!r}… is {len(data)} bytes of UTF-8, over the maximum"
            f" of {max_length}"
        )
    return STRING_TAG + data


def _integer_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidRecordError(f"{what}: expected an integer, got {type(value).__name__}")
    number = int(value)
    if not 0 <= number < _U64:
        raise InvalidRecordError(f"{what}: {number} is outside [0, 2^64)")
    return INTEGER_TAG + number.to_bytes(8, "big")


MAX_INTEGER_DIGITS = 20
"""Digits of the longest decimal a query may name (2^64 − 1 has 20)."""


def parse_decimal(text: str, what: str) -> int:
    """A non-negative integer named in a query: ASCII digits only (leading zeros allowed,
    no sign or space), at most :data:`MAX_INTEGER_DIGITS` of them."""
    if not text.isascii() or not text.isdigit():
        raise InvalidRecordError(f"{what}: {text[:40]!r} is not a decimal integer (digits only)")
    if len(text.lstrip("0")) > MAX_INTEGER_DIGITS:
        raise InvalidRecordError(f"{what}: {text[:24]}… has more than {MAX_INTEGER_DIGITS} digits")
    return int(text)


def value_bytes(value: Any, value_type: ValueType, max_length: int, what: str) -> bytes:
    """The tagged bytes of one value (step 1); :class:`InvalidRecordError` naming ``what``
    when it is not a value of the type."""
    if value_type == "integer":
        return _integer_bytes(value, what)
    return _string_bytes(value, max_length, what)


@functools.lru_cache(maxsize=64)
def _keyed(salt: bytes) -> Any:
    """BLAKE2b keyed with ``salt``, to be copied per value (cheaper than keying anew)."""
    return hashlib.blake2b(digest_size=8, key=salt)


def key_of(data: bytes, salt: bytes) -> int:
    """The 64-bit key (step 2) of tagged value bytes."""
    hasher = _keyed(salt).copy()
    hasher.update(data)
    return int.from_bytes(hasher.digest(), "big")


def keys_of(data: Sequence[bytes], salt: bytes) -> NDArray[np.uint64]:
    """The 64-bit keys (step 2) of many tagged value bytes: one digest each, read at once."""
    keyed = _keyed(salt)
    return _digests_to_keys((keyed.copy() for _ in data), data)


def _digests_to_keys(hashers: Iterable[Any], data: Iterable[bytes]) -> NDArray[np.uint64]:
    """Feed each hasher its bytes and read all the 8-byte digests as keys at once."""
    digests = []
    for hasher, item in zip(hashers, data, strict=True):
        hasher.update(item)
        digests.append(hasher.digest())
    return np.frombuffer(b"".join(digests), dtype=">u8").astype(np.uint64)


def _plain_ascii(distinct: list[Any], max_length: int) -> bool:
    """Whether distinct values are all non-empty ASCII strings within ``max_length``
    (then they are their own NFC and their UTF-8 is their ASCII), checked together."""
    if not distinct or set(map(type, distinct)) != {str}:
        return False
    if not "".join(distinct).isascii() or not min(map(len, distinct)) > 0:
        return False
    return max(map(len, distinct)) <= max_length


def _ascii_keys(distinct: list[str], salt: bytes) -> NDArray[np.uint64]:
    """The keys of checked plain-ASCII strings, from one hasher keyed and fed the string
    tag once, copied per value."""
    tagged = _keyed(salt).copy()
    tagged.update(STRING_TAG)
    copies = (tagged.copy() for _ in distinct)
    return _digests_to_keys(copies, map(str.encode, distinct))


def hash_keys(
    values: Sequence[Any] | NDArray[Any],
    salt: str,
    value_type: ValueType,
    max_length: int,
    what: str,
) -> NDArray[np.uint64]:
    """The 64-bit keys (step 2) of a column of values, each distinct value checked and
    hashed once."""
    salt_bytes = bytes.fromhex(salt)
    if value_type == "string":
        try:  # strings equal only strings of the same text: one check each suffices
            distinct = list(dict.fromkeys(values))
        except TypeError:  # an unhashable value: the loop below names it
            pass
        else:
            if _plain_ascii(distinct, max_length):
                distinct_keys = _ascii_keys(distinct, salt_bytes)
            else:
                data = [value_bytes(v, "string", max_length, what) for v in distinct]
                distinct_keys = keys_of(data, salt_bytes)
            found = dict(zip(distinct, distinct_keys.tolist(), strict=True))
            return np.fromiter(map(found.__getitem__, values), dtype=np.uint64, count=len(values))
    seen: dict[tuple[type, Any], int] = {}  # by type too: True == 1 but only 1 is a value
    keys = np.empty(len(values), dtype=np.uint64)
    for i, value in enumerate(values):
        try:
            memo: tuple[type, Any] | None = (type(value), value)
            key = seen.get(memo)  # type: ignore[arg-type]
        except TypeError:  # unhashable (a bytearray; or not a value: value_bytes says so)
            memo, key = None, None
        if key is None:
            key = key_of(value_bytes(value, value_type, max_length, what), salt_bytes)
            if memo is not None:
                seen[memo] = key
        keys[i] = key
    return keys


def buckets(keys: NDArray[np.uint64], j: NDArray[Any], g: int) -> NDArray[np.int64]:
    """``h_j(x)`` (step 3) for keys and hash indices that broadcast together (computed in
    place: one array and one scratch array of the broadcast shape)."""
    with np.errstate(over="ignore"):
        z = np.asarray(keys, dtype=np.uint64) + _offsets(j)
    _finish(z, np.empty_like(z), g)
    out: NDArray[np.int64] = z.view(np.int64)  # every bucket is below g < 2^32
    return out


def _offsets(j: NDArray[Any]) -> NDArray[np.uint64]:
    """``(j + 1) · 0x9E3779B97F4A7C15 (mod 2^64)`` for hash indices ``j``."""
    with np.errstate(over="ignore"):
        offsets: NDArray[np.uint64] = (np.asarray(j, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    return offsets


def _finish(z: NDArray[np.uint64], scratch: NDArray[np.uint64], g: int) -> None:
    """Step 3 from ``z = x + (j + 1)·golden``, in place in ``z``: the SplitMix64 finaliser
    then the range reduction to ``g`` buckets (``scratch``: an array of ``z``'s shape)."""
    with np.errstate(over="ignore"):
        for shift, multiplier in ((30, _MIX1), (27, _MIX2)):
            np.right_shift(z, np.uint64(shift), out=scratch)
            z ^= scratch
            z *= multiplier
        np.right_shift(z, np.uint64(31), out=scratch)
        z ^= scratch
        z >>= np.uint64(32)
        z *= np.uint64(g)
        z >>= np.uint64(32)


_M64 = (1 << 64) - 1


def bucket_of(key: int, j: int, g: int) -> int:
    """:func:`buckets` of one key and hash index, in Python integers (one record's path:
    a dozen numpy calls on one element cost more than the arithmetic)."""
    z = (key + (j + 1) * int(_GOLDEN)) & _M64
    z = ((z ^ (z >> 30)) * int(_MIX1)) & _M64
    z = ((z ^ (z >> 27)) * int(_MIX2)) & _M64
    z ^= z >> 31
    return ((z >> 32) * g) >> 32


QUERY_CELLS = 2**16
"""Buckets computed per step of :func:`row_sums` (``keys × rows``, 512 KiB of uint64): a
step that stays in the core's cache is 2–3× faster than one of 2^22 buckets."""


def row_sums(table: NDArray[Any], keys: NDArray[np.uint64]) -> NDArray[Any]:
    """``Σ_j table[j, h_j(x_v)]`` for each key ``x_v``, over all rows ``j`` of a
    ``rows × width`` table (:data:`QUERY_CELLS` buckets a step, in two arrays made once
    and reused by every step, read with ``np.take``: a heavy-hitters search 7-12 % faster
    than with fresh arrays and fancy indexing each step)."""
    rows, width = table.shape
    flat = table.ravel()
    offsets = _offsets(np.arange(rows))
    row_start = np.arange(rows, dtype=np.uint64) * np.uint64(width)
    keys = np.asarray(keys, dtype=np.uint64)
    out = np.empty(keys.size, dtype=table.dtype)
    step = max(1, QUERY_CELLS // rows)
    cells = np.empty((min(step, keys.size), rows), dtype=np.uint64)
    scratch = np.empty_like(cells)
    for start in range(0, keys.size, step):
        part = keys[start : start + step]
        z, spare = cells[: part.size], scratch[: part.size]
        with np.errstate(over="ignore"):
            np.add(part[:, None], offsets, out=z)
        _finish(z, spare, width)
        z += row_start  # each row's buckets, as indices of the flat table
        out[start : start + part.size] = np.take(flat, z.view(np.int64)).sum(axis=1)
    return out
