"""An independent ldpcollect client, written from docs/wire-format.md and docs/api.md alone.

It imports nothing of ``ldp_shared`` or ``ldp_client``: only the standard library, numpy
and httpx, as a developer in another language would have. It fetches a collection's
public config, recomputes every published number from the formulas of the wire-format
document (ε of each attribute, the integer channels and their exact ε, the lattice's
``K``, ``G``, ``M`` and scales, the layout, the config hash) and refuses the config on
any difference; then it perturbs records with its own samplers and its own numbers (a
numpy ``Generator``: seeded in the tests, a secure source on a real device), packs the
segments and posts the reports. It is the executable reference of the document's
section "Writing a client in another language".

Mechanisms: ``duchi``, ``piecewise``, ``hybrid``, ``laplace`` (numbers), ``grr``, ``oue``
and ``exponential`` with the ``ordinal`` or ``equality`` utility (categories), and the
open domains of the section "Open domains": ``flh`` (open strings, open integers or a
declared list of strings), ``pem`` (strings, with its prefix levels) and ``hadamard``
(``domain_size`` or a list), under the ``split`` budget; it refuses any other config.
Their hash family (NFC, UTF-8 and a tag; keyed BLAKE2b-64; the SplitMix64 finaliser's
bucket) is written here from the document's steps, and checked against its table.

Randomness: every sampler takes a ``gen``, a numpy ``Generator`` (seeded: tests only) or
a :class:`SecureSource` (the operating system's CSPRNG through :mod:`secrets`, what a
device uses); the open-domain samplers draw only raw 64-bit words from it and build
their uniform integers (by rejection) and doubles (``k/2^53``) themselves, so a device
and a test take the same path.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import numbers
import secrets
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np

TWO53 = 1 << 53
REL_TOL = 1e-12
LATTICE = ("piecewise", "hybrid", "laplace")
NUMERIC = ("duchi", *LATTICE)
OPEN = ("flh", "pem", "hadamard")
MASK64 = (1 << 64) - 1


class ConfigMismatchError(Exception):
    """The published config differs from what the spec implies."""


# -- randomness (wire-format: "Writing a client", step 4) ---------------------------------


class SecureSource:
    """Draws for a real device: every bit from :func:`secrets.token_bytes` (the operating
    system's CSPRNG). It has the members of a numpy ``Generator`` that this client uses
    (``bit_generator.random_raw``, ``random``, ``integers``, ``bytes``), each built from
    raw 64-bit words as :func:`uniform_doubles` and :func:`uniform_below` build them, so
    :func:`perturb` and :func:`upload` run on it unchanged."""

    @property
    def bit_generator(self) -> SecureSource:
        return self

    def random_raw(self, size: int) -> np.ndarray:
        return np.frombuffer(secrets.token_bytes(8 * int(size)), dtype="<u8").astype(np.uint64)

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        return uniform_doubles(self, size)

    def integers(self, low: int, high: Any, size: int) -> np.ndarray:
        return low + uniform_below(self, np.asarray(high) - low, size)

    def bytes(self, length: int) -> bytes:
        return secrets.token_bytes(length)


Source = np.random.Generator | SecureSource


def raw_words(gen: Source, n: int) -> np.ndarray:
    """``n`` uniform 64-bit words (``uint64``)."""
    return np.asarray(gen.bit_generator.random_raw(n), dtype=np.uint64)


def uniform_doubles(gen: Source, size: int | tuple[int, ...]) -> np.ndarray:
    """Uniform doubles ``k/2^53``, ``k`` the top 53 bits of a word."""
    shape = (size,) if isinstance(size, int) else tuple(size)
    words = raw_words(gen, math.prod(shape)) >> np.uint64(11)
    return (words.astype(np.float64) * 2.0**-53).reshape(shape)


def uniform_below(gen: Source, bound: Any, n: int) -> np.ndarray:
    """``n`` uniform integers in ``[0, bound)`` (``1 ≤ bound ≤ 2^63``, one or one per
    draw; ``int64``), by rejection: a word is kept when it lies below the largest multiple
    of ``bound`` that fits in 2^64, then reduced modulo ``bound``; unbiased."""
    bound = np.broadcast_to(np.asarray(bound, dtype=np.uint64), (n,))
    if n and not (int(bound.min()) >= 1 and int(bound.max()) <= 1 << 63):
        raise ValueError("uniform_below needs bounds from 1 to 2^63")
    top = np.uint64(MASK64)
    limit = top - (top % bound + np.uint64(1)) % bound  # limit + 1 ≡ 0 (mod bound)
    out = np.empty(n, dtype=np.uint64)
    todo = np.arange(n)
    while todo.size:
        words = raw_words(gen, todo.size)
        kept = words <= limit[todo]
        out[todo[kept]] = words[kept] % bound[todo[kept]]
        todo = todo[~kept]
    return out.astype(np.int64)


# -- integer channels (wire-format: "The channel", lattice "Channel") --------------------


def quantise(prob: np.ndarray) -> np.ndarray:
    """Columns of ``prob`` (each summing to one) as int64 weights ``≥ 1`` summing to 2^53:
    ``⌊2^53 P⌋`` (at least 1), the shortfall to the largest remainders, an excess taken
    from the smallest, ties by lower index."""
    scaled = prob * float(TWO53)  # exact: a power of two
    base = np.maximum(np.floor(scaled), 1.0).astype(np.int64)
    rem = scaled - np.floor(scaled)
    for k in range(prob.shape[1]):
        gap = TWO53 - int(base[:, k].sum())
        order = np.lexsort((np.arange(prob.shape[0]), -rem[:, k] if gap > 0 else rem[:, k]))
        base[order[: abs(gap)], k] += 1 if gap > 0 else -1
    assert (base.sum(axis=0) == TWO53).all() and (base >= 1).all()
    return base


def channel_epsilon(weights: np.ndarray) -> float:
    """``max_g max_{k,k'} ln(W[g,k]/W[g,k'])``."""
    w = weights.astype(np.float64)  # weights < 2^53 are exact doubles
    return float(np.max(np.log(w.max(axis=1) / w.min(axis=1))))


def sample_channel(weights: np.ndarray, columns: np.ndarray, gen: Source) -> Any:
    """Draw one answer per input column from a uniform 53-bit ``U`` each (a raw 64-bit
    word shifted right by 11)."""
    u = gen.bit_generator.random_raw(columns.size) >> np.uint64(11)
    return answer_for(weights, columns, u.astype(np.int64))


def answer_for(weights: np.ndarray, columns: np.ndarray, u: np.ndarray) -> Any:
    """The first row whose cumulative weight in column ``columns[i]`` exceeds ``u[i]``."""
    rows, cols = weights.shape
    # Stack the columns' cumulative sums end to end: column k's lie in [k 2^53, (k+1) 2^53].
    cum = (np.cumsum(weights, axis=0) + np.arange(cols, dtype=np.int64) * TWO53).T.ravel()
    offset = columns.astype(np.int64) * TWO53
    return np.searchsorted(cum, u + offset, side="right") - columns.astype(np.int64) * rows


def round_to_levels(t: np.ndarray, levels: int, gen: Source) -> Any:
    """Randomized rounding of ``t ∈ [−1, 1]`` to ``k ∈ 0..K`` (``t_k = −1 + 2k/K``)."""
    s = (t + 1.0) * levels / 2.0
    low = np.floor(s)
    return (low + (gen.random(t.size) < s - low)).astype(np.int64)


def level_values(levels: int) -> np.ndarray:
    return -1.0 + 2.0 * np.arange(levels + 1) / levels


# -- the ideal channels, from the formulas ---------------------------------------------


def piecewise_matrix(eps: float, levels: int, cells: int) -> np.ndarray:
    """``M[g,k] = (p/e^ε)|cell| + (p − p/e^ε)|cell ∩ [l(t_k), r(t_k)]|``, columns normalised."""
    half = math.exp(eps / 2.0)
    c = (half + 1.0) / (half - 1.0)
    p = (math.exp(eps) - half) / (2.0 * half + 2.0)
    t = level_values(levels)
    left = (c + 1.0) * t / 2.0 - (c - 1.0) / 2.0
    right = left + c - 1.0
    edges = np.arange(cells + 1) * (2.0 * c / cells) - c  # the step first, as the doc says
    lo, hi = edges[:-1, None], edges[1:, None]
    overlap = np.clip(np.minimum(hi, right[None, :]) - np.maximum(lo, left[None, :]), 0.0, None)
    m = (p / math.exp(eps)) * (hi - lo) + (p - p / math.exp(eps)) * overlap
    return m / m.sum(axis=0)


def duchi_plus(eps: float, t: Any) -> Any:
    """``P(+C | t) = 1/2 + t(e^ε − 1)/(2(e^ε + 1))``."""
    return 0.5 + t * (math.exp(eps) - 1.0) / (2.0 * (math.exp(eps) + 1.0))


def hybrid_alpha(eps: float) -> float:
    return 1.0 - math.exp(-eps / 2.0) if eps > 0.61 else 0.0


def hybrid_matrix(eps: float, levels: int) -> np.ndarray:
    plus = duchi_plus(eps, level_values(levels))
    alpha = hybrid_alpha(eps)
    duchi = (1.0 - alpha) * np.vstack([1.0 - plus, plus])
    if alpha == 0.0:
        return duchi / duchi.sum(axis=0)
    m = np.vstack([alpha * piecewise_matrix(eps, levels, 254), duchi])
    return m / m.sum(axis=0)


def laplace_matrix(eps: float, levels: int, margin: int) -> np.ndarray:
    r = math.exp(-eps / levels)
    c = (1.0 - r) / (1.0 + r)
    y, k = np.arange(-margin, levels + margin + 1)[:, None], np.arange(levels + 1)[None, :]
    m = c * r ** np.abs(y - k).astype(np.float64)
    m[0] = c * r ** (margin + k[0]) / (1.0 - r)
    m[-1] = c * r ** (levels + margin - k[0]) / (1.0 - r)
    return m / m.sum(axis=0)


def laplace_margin(eps: float, levels: int) -> int | None:
    """The largest ``M`` whose farthest answer keeps a point probability
    ``(1 − r)/(1 + r)·r^{K+M}`` of at least ``8·10⁻⁷/ε`` (``None``: not even ``M = 0``)."""
    r = math.exp(-eps / levels)
    c, floor = (1.0 - r) / (1.0 + r), 8e-7 / eps
    if c * r**levels < floor:
        return None
    margin = max(0, math.floor(math.log(floor / c) / math.log(r)) - levels)
    while c * r ** (levels + margin + 1) >= floor:
        margin += 1
    while c * r ** (levels + margin) < floor:
        margin -= 1
    return margin


def worst_variance(m: np.ndarray) -> float:
    """Largest per-report variance over ``t ∈ [−1, 1]`` (rounding included) of the
    unbiased decoder of least ``Σ π̄_g v_g²`` (``Mᵀv = t_k``)."""
    levels = m.shape[1] - 1
    t = level_values(levels)
    a = m / m.mean(axis=1)[:, None]
    q = m.T @ (a @ np.linalg.solve(m.T @ a, t)) ** 2  # E[v²] at each level
    # Between t_k and t_{k+1} the variance (1 − f)q_k + f q_{k+1} − t² is concave in t,
    # highest at t* = (q_{k+1} − q_k)K/4 clipped to the interval.
    star = np.clip((q[1:] - q[:-1]) * levels / 4.0, t[:-1], t[1:])
    f = (star - t[:-1]) * levels / 2.0
    return float(np.max((1.0 - f) * q[:-1] + f * q[1:] - star**2))


@functools.lru_cache(maxsize=64)
def laplace_levels(eps: float) -> int:
    """The smallest power of two ``K ≤ 256`` (window ``G ≤ 2048``) whose worst-case
    variance is within 1% of the best candidate's."""
    worst: dict[int, float] = {}
    for levels in (2**i for i in range(9)):
        margin = laplace_margin(eps, levels)
        if margin is not None and levels + 2 * margin + 1 <= 2048:
            worst[levels] = worst_variance(laplace_matrix(eps, levels, margin))
    if not worst:
        raise ConfigMismatchError(f"laplace: no lattice represents ε = {eps} in 53 bits")
    return min(k for k, var in worst.items() if var <= 1.01 * min(worst.values()))


def exponential_matrix(eps: float, d: int, utility: str, calibration: str) -> tuple[Any, float]:
    """Column ``x`` is ``softmax(λ u(x, ·))``; ``(M, λ)``."""
    idx = np.arange(d)
    if utility == "ordinal":
        u, delta, tight = -np.abs(idx[None, :] - idx[:, None]).astype(np.float64), d - 1.0, d - 1
    elif utility == "equality":
        u, delta, tight = np.eye(d), 1.0, 1
    else:
        raise ConfigMismatchError(f"this client knows no {utility!r} utility")
    lam = eps / (2.0 * delta) if calibration == "textbook" else eps / tight
    z = lam * u  # row x: the exponents of column x of the channel
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).T, lam


def duchi_epsilon(eps: float) -> float:
    """ε of the drawn probabilities: ``u = k/2^53 < P`` holds for ``⌈2^53 P⌉`` values of k."""
    hi, lo = (math.ceil(duchi_plus(eps, s) * TWO53) / TWO53 for s in (1.0, -1.0))
    return max(math.log(hi / lo), math.log((1.0 - lo) / (1.0 - hi)))


# -- open domains (wire-format: "Open domains: flh, pem, hadamard") ---------------------

TAG_STRING, TAG_INTEGER, TAG_PREFIX = b"s", b"i", b"p"
SPLITMIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def string_bytes(value: Any, max_length: int) -> bytes:
    """A string's bytes: Unicode NFC (nothing else), UTF-8, 1 to ``max_length`` bytes."""
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    raw = unicodedata.normalize("NFC", value).encode("utf-8")  # a lone surrogate raises
    if not 1 <= len(raw) <= max_length:
        raise ValueError(f"a value must be 1 to {max_length} bytes in UTF-8, not {len(raw)}")
    return raw


def integer_bytes(value: Any) -> bytes:
    """An integer ``0 ≤ x < 2^64`` as its 8 big-endian bytes (``True`` is no integer)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"expected an integer, got {type(value).__name__}")
    if not 0 <= int(value) <= MASK64:
        raise ValueError("an integer value must lie in [0, 2^64)")
    return int(value).to_bytes(8, "big")


def hash_key(tagged: bytes, salt: bytes) -> int:
    """``x``: keyed BLAKE2b (RFC 7693) of the tagged bytes, 8-byte digest, big-endian."""
    return int.from_bytes(hashlib.blake2b(tagged, digest_size=8, key=salt).digest(), "big")


def bucket_of(keys: Any, j: Any, g: int) -> np.ndarray:
    """``h_j(x)`` among ``g`` buckets, elementwise, in unsigned 64-bit arithmetic (numpy
    ``uint64`` arrays wrap modulo 2^64)."""
    x = np.atleast_1d(np.asarray(keys, dtype=np.uint64))
    jj = np.atleast_1d(np.asarray(j, dtype=np.uint64))
    with np.errstate(over="ignore"):
        z = x + (jj + np.uint64(1)) * np.uint64(SPLITMIX[0])
        z = (z ^ (z >> np.uint64(30))) * np.uint64(SPLITMIX[1])
        z = (z ^ (z >> np.uint64(27))) * np.uint64(SPLITMIX[2])
        z = z ^ (z >> np.uint64(31))
        return ((z >> np.uint64(32)) * np.uint64(g)) >> np.uint64(32)


def open_buckets(eps: float) -> int:
    """``g = round(e^ε + 1)``, held between 2 and 256."""
    return min(256, max(2, round(math.exp(eps) + 1.0)))


def hadamard_rows(d: int) -> int:
    """``D``, the least power of two ``≥ d``."""
    return 1 << (d - 1).bit_length()


def value_keys(attr: Attribute, values: Sequence[Any]) -> np.ndarray:
    """Per value: its keys at the levels ``1..L`` (``pem``; one column, ``flh``), each
    distinct value checked and hashed once."""
    memo: dict[Any, int] = {}
    table: list[list[int]] = []
    index = np.empty(len(values), dtype=np.int64)
    declared = frozenset(attr.domain)
    for i, value in enumerate(values):
        # 1 and True, 1 and 1.0 are one dict key: key the memo by type as well
        memo_key = (type(value), value)
        if memo_key not in memo:
            memo[memo_key] = len(table)
            table.append(keys_at_levels(attr, value, declared))
        index[i] = memo[memo_key]
    return np.array(table, dtype=np.uint64).reshape(-1, attr.levels or 1)[index]


def keys_at_levels(attr: Attribute, value: Any, declared: frozenset[str]) -> list[int]:
    """One value's keys: ``[x]`` for ``flh``, one per level ``ℓ = 1..L`` for ``pem``."""
    if attr.value_type == "integer":
        return [hash_key(TAG_INTEGER + integer_bytes(value), attr.salt)]
    raw = string_bytes(value, attr.max_length)
    if declared and raw.decode("utf-8") not in declared:
        raise ValueError(f"{attr.name}: {value!r} is not in the declared domain")
    whole = hash_key(TAG_STRING + raw, attr.salt)
    if attr.mechanism == "flh":
        return [whole]
    # pem: at level ℓ the prefix key of the first ℓ bytes when the string is longer than
    # ℓ bytes, else the key of the whole string (as flh hashes it).
    return [
        hash_key(TAG_PREFIX + raw[:level], attr.salt) if len(raw) > level else whole
        for level in range(1, attr.levels + 1)
    ]


def grr_buckets(attr: Attribute, true: np.ndarray, gen: Source) -> np.ndarray:
    """``y = b`` with probability ``p``, else a uniform one of the other ``g − 1``."""
    n, g = true.size, attr.buckets
    keep = uniform_doubles(gen, n) < attr.derived["p"]
    other = uniform_below(gen, g - 1, n)
    other += other >= true
    return np.where(keep, true, other)


def perturb_open(attr: Attribute, values: Any, gen: Source) -> np.ndarray:
    """Segments (``n × byte_length`` uint8) of an ``flh``, ``pem`` or ``hadamard``
    attribute for the true values: strings or integers (``flh``, ``pem``), value indices
    (``hadamard``: the position in ``domain`` or the integer itself)."""
    n = len(values)
    if attr.mechanism == "hadamard":
        v = np.asarray(values) if n else np.zeros(0, dtype=np.int64)
        if v.dtype.kind not in "iu" or (n and (v.min() < 0 or v.max() >= attr.size)):
            raise ValueError(f"{attr.name}: values must be integers in [0, {attr.size})")
        row = uniform_below(gen, attr.rows, n)
        plus = np.bitwise_count(row & v.astype(np.int64)) % 2 == 0  # H[j, v] = +1
        keep = uniform_doubles(gen, n) < attr.derived["p"]
        word = 2 * row + (plus == keep)  # s = 1 for y = +1
        return ((word[:, None] >> np.array([16, 8, 0])) & 0xFF).astype(np.uint8)
    keys = value_keys(attr, values)
    out = []
    if attr.mechanism == "pem":
        level = uniform_below(gen, attr.levels, n)  # ℓ − 1
        keys = keys[np.arange(n), level]
        out.append(level[:, None].astype(np.uint8))
    else:
        keys = keys[:, 0]
    j = uniform_below(gen, attr.hashes, n)
    y = grr_buckets(attr, bucket_of(keys, j, attr.buckets).astype(np.int64), gen)
    out += [index_bytes_of(j, 2), y[:, None].astype(np.uint8)]
    return np.hstack(out)


def escape_values(values: Sequence[Any]) -> str:
    """The text of ``frequencies?values=``: values separated by commas, a comma or a
    backslash inside one written ``\\,`` or ``\\\\``; integers in decimal."""
    parts = []
    for value in values:
        text = str(int(value)) if isinstance(value, numbers.Integral) else str(value)
        parts.append(text.replace("\\", "\\\\").replace(",", "\\,"))
    return ",".join(parts)


SPEC_MEMBERS = {
    "flh": {"domain", "value_type", "max_length", "hashes", "salt"},
    "pem": {"max_length", "hashes", "salt"},
    "hadamard": {"domain", "domain_size"},
}


def plan_open(spec_attr: Mapping[str, Any], eps: float, published: Mapping[str, Any]) -> Attribute:
    """An ``flh``, ``pem`` or ``hadamard`` attribute from its spec entry."""
    mech, name = spec_attr["mechanism"], spec_attr["name"]
    known = SPEC_MEMBERS[mech] | {"name", "mechanism", "weight"}
    unknown = [k for k, v in spec_attr.items() if k not in known and v is not None]
    if unknown:
        raise ConfigMismatchError(f"{name}: this client does not know the spec's {unknown}")
    out: dict[str, Any] = {"name": name, "mechanism": mech}
    e = math.exp(eps)
    if mech == "hadamard":
        domain, size = spec_attr.get("domain"), spec_attr.get("domain_size")
        if (domain is None) == (size is None):
            raise ConfigMismatchError(f"{name}: hadamard needs a domain or a domain_size")
        d = len(domain) if domain is not None else size
        if not isinstance(d, int) or isinstance(d, bool) or not 2 <= d <= 1 << 23:
            raise ConfigMismatchError(f"{name}: a hadamard domain of {d!r} values")
        rows = hadamard_rows(d)  # 2j + s must fit in 24 bits
        p, q = e / (e + 1.0), 1.0 / (e + 1.0)
        if domain is not None:
            out["domain"] = list(domain)
        out |= {"epsilon": math.log(p / q), "p": p, "q": q, "encoding": "hadamard"}
        out["rows"] = rows
        attr = Attribute(name, mech, eps, out, 3, rows, domain=list(domain or []))
        attr.rows, attr.size = rows, d
        return attr
    salt = spec_attr.get("salt")
    if not (isinstance(salt, str) and len(salt) == 32 and set(salt) <= set("0123456789abcdef")):
        raise ConfigMismatchError(f"{name}: the salt must be 32 lowercase hex digits")
    max_length = spec_attr.get("max_length")
    longest = 32 if mech == "pem" else 1 << 31  # pem: one level a byte, at most 32
    if not isinstance(max_length, int) or not 1 <= max_length <= longest:
        raise ConfigMismatchError(f"{name}: max_length {max_length!r}")
    hashes = spec_attr.get("hashes")
    if hashes is None and mech == "pem":
        # The document gives no rule for pem's number of hash functions when the spec
        # leaves it out: take the published one (it does not change ε, a report's j is
        # drawn independently of the value), within what the uint16 j can carry.
        hashes = published.get("hashes")
    if not isinstance(hashes, int) or isinstance(hashes, bool) or not 1 <= hashes <= 65536:
        raise ConfigMismatchError(f"{name}: hashes {hashes!r}")
    g = open_buckets(eps)
    p, q = e / (e + g - 1.0), 1.0 / (e + g - 1.0)
    value_type, domain = spec_attr.get("value_type", "string"), spec_attr.get("domain")
    if mech == "flh":
        if value_type not in ("string", "integer"):
            raise ConfigMismatchError(f"{name}: value_type {value_type!r}")
        if domain != "open":
            listed = isinstance(domain, list) and all(isinstance(v, str) for v in domain)
            if value_type != "string" or not listed:
                raise ConfigMismatchError(f"{name}: a domain of {domain!r}")
            if any(unicodedata.normalize("NFC", v) != v for v in domain):
                raise ConfigMismatchError(f"{name}: a declared value not in NFC")
            out["domain"] = list(domain)
    out |= {"epsilon": math.log(p / q), "p": p, "q": q, "hashes": hashes, "buckets": g}
    out["encoding"] = "hashed" if mech == "flh" else "prefix-hashed"
    levels = max_length if mech == "pem" else 0
    if mech == "pem":
        out["levels"] = levels
    counters = max(levels, 1) * hashes * g
    listed_domain = list(domain) if isinstance(domain, list) else []
    attr = Attribute(name, mech, eps, out, 4 if mech == "pem" else 3, counters)
    attr.domain, attr.levels = listed_domain, levels
    attr.salt, attr.value_type, attr.max_length = bytes.fromhex(salt), value_type, max_length
    attr.hashes, attr.buckets = hashes, g
    return attr


# -- the config: recompute, compare, keep our own numbers ----------------------------------


@dataclass
class Attribute:
    """One attribute as this client perturbs it (its own numbers, never the published)."""

    name: str
    mechanism: str
    eps: float  # the allotted share ε_j
    derived: dict[str, Any]  # what the config must publish for it, as we derive it
    byte_length: int
    counters: int
    weights: np.ndarray | None = None  # the integer channel, rows = answers
    levels: int = 0
    lo: float = 0.0
    hi: float = 1.0
    domain: list[str] = field(default_factory=list)
    # open domains: the hash family's salt, value type and longest value (flh, pem); k, g
    # (and the levels L in ``levels``); hadamard's rows D and domain size d
    salt: bytes = b""
    value_type: str = "string"
    max_length: int = 0
    hashes: int = 0
    buckets: int = 0
    rows: int = 0
    size: int = 0


def index_bytes(size: int) -> int:
    return 1 if size <= 256 else 2


def plan_attribute(
    spec_attr: Mapping[str, Any], eps: float, published: Mapping[str, Any] | None = None
) -> Attribute:
    """The attribute's channel and the members its config entry must show (``published``,
    its config entry, is read for pem's ``hashes`` alone, when the spec leaves it out)."""
    mech, name = spec_attr["mechanism"], spec_attr["name"]
    if mech in OPEN:
        return plan_open(spec_attr, eps, published or {})
    out: dict[str, Any] = {"name": name, "mechanism": mech}
    if mech in NUMERIC:
        lo, hi = float(spec_attr["lo"]), float(spec_attr["hi"])
        out |= {"lo": lo, "hi": hi}
        if mech == "duchi":
            out |= {"scale": (math.exp(eps) + 1.0) / (math.exp(eps) - 1.0)}
            out |= {"epsilon": duchi_epsilon(eps), "encoding": "sign"}
            return Attribute(name, mech, eps, out, 1, 1, lo=lo, hi=hi)
        levels = laplace_levels(eps) if mech == "laplace" else 128
        if mech == "piecewise":
            m = piecewise_matrix(eps, levels, 256)
            out["scale"] = (math.exp(eps / 2.0) + 1.0) / (math.exp(eps / 2.0) - 1.0)
        elif mech == "hybrid":
            m = hybrid_matrix(eps, levels)
            out["pm_probability"] = hybrid_alpha(eps)
            out["scale"] = (math.exp(eps / 2.0) + 1.0) / (math.exp(eps / 2.0) - 1.0)
            out["duchi_scale"] = (math.exp(eps) + 1.0) / (math.exp(eps) - 1.0)
        else:
            margin = laplace_margin(eps, levels)
            assert margin is not None  # laplace_levels chose a K that has one
            m = laplace_matrix(eps, levels, margin)
            out["margin"] = margin
        weights = quantise(m)
        cells = weights.shape[0]
        out |= {"levels": levels, "cells": cells, "epsilon": channel_epsilon(weights)}
        out["encoding"] = "index"
        if out["epsilon"] > eps * (1.0 + 1e-9):
            raise ConfigMismatchError(f"{name}: the quantised channel spends more than ε_j")
        return Attribute(
            name, mech, eps, out, index_bytes(cells), cells, weights, levels, lo=lo, hi=hi
        )
    domain = list(spec_attr["domain"])
    d = len(domain)
    out["domain"] = domain
    if mech == "grr":
        p, q = math.exp(eps) / (math.exp(eps) + d - 1.0), 1.0 / (math.exp(eps) + d - 1.0)
        out |= {"p": p, "q": q, "epsilon": math.log(p / q), "encoding": "index"}
        return Attribute(name, mech, eps, out, index_bytes(d), d, domain=domain)
    if mech == "oue":
        p, q = 0.5, 1.0 / (math.exp(eps) + 1.0)
        out |= {"p": p, "q": q, "epsilon": math.log(p * (1.0 - q) / ((1.0 - p) * q))}
        out["encoding"] = "bits"
        return Attribute(name, mech, eps, out, (d + 7) // 8, d, domain=domain)
    if mech == "exponential":
        calibration = spec_attr.get("calibration", "tight")
        m, lam = exponential_matrix(eps, d, spec_attr["utility"], calibration)
        weights = quantise(m)
        out |= {"scale": lam, "epsilon": channel_epsilon(weights), "encoding": "index"}
        return Attribute(name, mech, eps, out, index_bytes(d), d, weights, domain=domain)
    raise ConfigMismatchError(f"{name}: this client does not implement {mech!r}")


def config_hash(spec: Mapping[str, Any]) -> str:
    text = json.dumps(
        {"format_version": 1, "spec": spec},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def same(published: Any, ours: Any, slack: float = 0.0) -> bool:
    """Floats to a relative 1e-12 (plus ``slack``), everything else exactly."""
    if isinstance(ours, float):
        return (
            isinstance(published, (int, float))
            and not isinstance(published, bool)
            and (abs(published - ours) <= REL_TOL * abs(ours) + slack)
        )
    return bool(published == ours) and type(published) is type(ours)


def epsilon_slack(attr: Attribute) -> float:
    """Two implementations of one integer channel may round a weight the other way: one
    unit in the smallest weight ``w`` moves ε by up to ``1/w``."""
    return 0.0 if attr.weights is None else 2.0 / float(attr.weights.min())


@dataclass
class Plan:
    """A verified config: the attributes in report order and the report's size."""

    name: str
    config_hash: str
    report_bytes: int
    attributes: list[Attribute]


def config_problems(config: Mapping[str, Any]) -> tuple[list[str], Plan]:
    """Recompute everything the config publishes; every difference, and our plan."""
    spec = config["spec"]
    if config["format_version"] != 1 or spec.get("budget", "split") != "split":
        raise ConfigMismatchError("this client speaks format_version 1 with the split budget")
    if any(a.get("mechanism") == "mask" for a in spec["attributes"]) or spec.get("label"):
        raise ConfigMismatchError("this client implements no MASK attribute and no label")
    if len(config["attributes"]) != len(spec["attributes"]):
        raise ConfigMismatchError("the config has another number of attributes than its spec")
    total = sum(float(a["weight"]) for a in spec["attributes"])
    attrs, offset, stats = [], 0, 0
    for spec_attr, published in zip(spec["attributes"], config["attributes"], strict=True):
        eps = float(spec["epsilon"]) * spec_attr["weight"] / total
        attr = plan_attribute(spec_attr, eps, published)
        attr.derived |= {"byte_offset": offset, "byte_length": attr.byte_length}
        attr.derived["stats_offset"] = stats
        offset, stats = offset + attr.byte_length, stats + attr.counters
        attrs.append(attr)
    problems = []
    for ours, theirs in zip(attrs, config["attributes"], strict=True):
        for key in sorted(set(ours.derived) | set(theirs)):
            slack = epsilon_slack(ours) if key == "epsilon" else 0.0
            if key not in ours.derived:
                if theirs[key] is not None:  # a member this client does not understand
                    problems.append(f"{ours.name}: unexpected member {key!r}")
            elif key not in theirs or not same(theirs[key], ours.derived[key], slack):
                problems.append(
                    f"{ours.name}.{key}: published {theirs.get(key)!r}, "
                    f"recomputed {ours.derived[key]!r}"
                )
    record_eps = math.fsum(float(a["epsilon"]) for a in config["attributes"])
    expected_top: dict[str, Any] = {"epsilon": record_eps, "report_bytes": offset}
    expected_top["stats_length"] = stats
    expected_top["config_hash"] = config_hash(spec)
    for key, value in expected_top.items():
        if not same(config.get(key), value):
            problems.append(f"{key}: published {config.get(key)!r}, recomputed {value!r}")
    return problems, Plan(spec["name"], config["config_hash"], offset, attrs)


def verify_config(config: Mapping[str, Any]) -> Plan:
    """The plan of a config that publishes exactly what its spec implies; else
    :class:`ConfigMismatchError` naming every difference."""
    problems, plan = config_problems(config)
    if problems:
        raise ConfigMismatchError("; ".join(problems))
    return plan


# -- perturbation and packing ---------------------------------------------------------------


def scaled(attr: Attribute, x: np.ndarray) -> Any:
    if not np.isfinite(x).all():
        raise ValueError(f"{attr.name}: values must be finite")
    clipped = np.clip(x.astype(np.float64), attr.lo, attr.hi)
    return 2.0 * (clipped - attr.lo) / (attr.hi - attr.lo) - 1.0


def perturb_segment(attr: Attribute, values: np.ndarray, gen: Source) -> Any:
    """The segments (``n × byte_length`` bytes) of one attribute for ``n`` true values
    (numbers, or indices into the domain)."""
    if attr.mechanism in OPEN:
        return perturb_open(attr, values, gen)
    n = values.size
    if attr.mechanism == "duchi":
        answers = gen.random(n) < duchi_plus(attr.eps, scaled(attr, values))
    elif attr.mechanism in LATTICE:
        assert attr.weights is not None
        level = round_to_levels(scaled(attr, values), attr.levels, gen)
        answers = sample_channel(attr.weights, level, gen)
    elif attr.mechanism == "exponential":
        assert attr.weights is not None
        answers = sample_channel(attr.weights, values.astype(np.int64), gen)
    elif attr.mechanism == "grr":
        p = attr.derived["p"]
        other = gen.integers(0, len(attr.domain) - 1, n)
        other += other >= values
        answers = np.where(gen.random(n) < p, values, other)
    else:  # oue: the true bit stays 1 with p = 1/2, every other bit is 1 with q
        d = len(attr.domain)
        bits = gen.random((n, d)) < attr.derived["q"]
        bits[np.arange(n), values] = gen.random(n) < 0.5
        return np.packbits(bits, axis=1, bitorder="big")
    return index_bytes_of(np.asarray(answers, dtype=np.int64), attr.byte_length)


def index_bytes_of(index: np.ndarray, width: int) -> Any:
    """Unsigned big-endian integers of ``width`` bytes, one row per index."""
    return index.astype(">u2" if width == 2 else "u1").view(np.uint8).reshape(-1, width)


def perturb(plan: Plan, columns: Mapping[str, np.ndarray], gen: Source) -> Any:
    """Reports (``n × report_bytes`` uint8) for records given column-wise."""
    return np.hstack([perturb_segment(a, columns[a.name], gen) for a in plan.attributes])


# -- upload --------------------------------------------------------------------------------


def report_ids(n: int, gen: Source) -> list[str]:
    """``n`` ids of 128 random bits, URL-safe base64 without padding (22 characters)."""
    raw = gen.bytes(16 * n)
    return [base64.urlsafe_b64encode(raw[16 * i : 16 * i + 16]).decode()[:22] for i in range(n)]


def upload(
    http: httpx.Client, plan: Plan, reports: np.ndarray, gen: Source, batch: int
) -> list[dict[str, Any]]:
    """POST the reports in batches of at most ``batch`` (≤ 10,000); every outcome, in order."""
    outcomes: list[dict[str, Any]] = []
    ids = report_ids(len(reports), gen)
    for start in range(0, len(reports), batch):
        body = {
            "reports": [
                {
                    "id": ids[i],
                    "config_hash": plan.config_hash,
                    "bits": base64.b64encode(reports[i].tobytes()).decode(),
                }
                for i in range(start, min(start + batch, len(reports)))
            ]
        }
        answer = http.post(f"/v1/collections/{plan.name}/reports", json=body)
        answer.raise_for_status()
        outcomes.extend(answer.json()["outcomes"])
    return outcomes


def fetch_plan(http: httpx.Client, name: str) -> Plan:
    answer = http.get(f"/v1/collections/{name}")
    answer.raise_for_status()
    return verify_config(answer.json())
