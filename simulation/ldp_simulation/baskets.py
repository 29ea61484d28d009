"""Market baskets as packed bit matrices: a seeded synthetic generator and FIMI files.

A basket over a catalogue of ``m`` items is an ``m``-bit row, packed most significant bit
first (``numpy.packbits``, the wire format's order): item ``j`` is bit ``7 - j mod 8``
of byte ``j // 8``. A data set of ``n`` baskets is an ``n × ceil(m/8)`` uint8 matrix.

:func:`quest_baskets` follows the synthetic generator of R. Agrawal and R. Srikant,
"Fast Algorithms for Mining Association Rules", VLDB 1994, §2.4.3 (the "IBM Quest"
generator behind T10I4D100K), written here from that description with numpy:

1. ``L`` potentially frequent patterns; pattern sizes ~ Poisson(``I``) (at least 1).
   The first pattern's items are drawn uniformly; each later pattern takes a fraction
   ~ Exponential(mean ``correlation``) of its items from the previous pattern and the
   rest uniformly.
2. Each pattern has a weight ~ Exponential(1) (normalised to sum to 1) and a corruption
   level ~ Normal(``corruption_mean``, ``corruption_sd``), clipped to [0, 0.95].
3. A basket's target size ~ Poisson(``T``) (at least 1). Patterns are drawn by weight
   and added to the basket; before a pattern is added, items are dropped from it while
   a uniform draw stays below its corruption level. A pattern that does not fit in what
   is left of the target size is still added in half the cases (always, if the basket
   is still empty), and the basket ends. No basket is empty.

Differences from the original program (which this is not a copy of): a pattern that
does not fit is dropped instead of being carried over to the next basket, and items are
drawn uniformly rather than from the original's item weights. The data sets are
therefore "Quest-style": sparse baskets built from overlapping, corrupted patterns, with
the same parameters (``T10I4`` means ``T = 10``, ``I = 4``).

Everything is a function of the seed alone (baskets are generated in fixed blocks of
:data:`QUEST_BLOCK` rows from child seeds), so any prefix of rows can be regenerated.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ldp_shared.errors import ConfigurationError, InvalidRecordError

ByteMatrix = NDArray[np.uint8]

QUEST_BLOCK = 16_384
"""Baskets per generator block (each block has its own child seed)."""

_MAX_ROUNDS = 200


@dataclass(frozen=True)
class QuestParameters:
    """Parameters of :func:`quest_baskets` (Agrawal and Srikant's names in brackets).

    ``n_baskets`` [|D|], ``n_items`` [N], ``avg_basket_size`` [|T|],
    ``avg_pattern_size`` [|I|], ``n_patterns`` [|L|]; the defaults are those of
    T10I4D100K (N = 1000, |L| = 2000).
    """

    n_baskets: int
    n_items: int = 1000
    avg_basket_size: float = 10.0
    avg_pattern_size: float = 4.0
    n_patterns: int = 2000
    correlation: float = 0.5
    corruption_mean: float = 0.5
    corruption_sd: float = 0.1

    def __post_init__(self) -> None:
        if int(self.n_baskets) != self.n_baskets or self.n_baskets < 1:
            raise ConfigurationError(f"n_baskets must be a positive integer, got {self.n_baskets}")
        if int(self.n_items) != self.n_items or self.n_items < 2:
            raise ConfigurationError(f"n_items must be an integer >= 2, got {self.n_items}")
        if int(self.n_patterns) != self.n_patterns or self.n_patterns < 1:
            raise ConfigurationError(f"n_patterns must be >= 1, got {self.n_patterns}")
        for name in ("avg_basket_size", "avg_pattern_size"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value <= 0.0:
                raise ConfigurationError(f"{name} must be a positive number, got {value!r}")
        if not 0.0 <= self.correlation <= 1.0:
            raise ConfigurationError("correlation must lie in [0, 1]")
        if not 0.0 <= self.corruption_mean < 1.0 or self.corruption_sd < 0.0:
            raise ConfigurationError("corruption_mean must lie in [0, 1), corruption_sd >= 0")


@dataclass(frozen=True, eq=False)
class _Patterns:
    items: NDArray[np.int64]  # L × width, padded with -1
    sizes: NDArray[np.int64]
    weights: NDArray[np.float64]
    corruption: NDArray[np.float64]


def _patterns(params: QuestParameters, rng: np.random.Generator) -> _Patterns:
    n_items = params.n_items
    count = params.n_patterns
    sizes = np.maximum(1, rng.poisson(params.avg_pattern_size, size=count))
    sizes = np.minimum(sizes, n_items).astype(np.int64)
    width = int(sizes.max())
    items = np.full((count, width), -1, dtype=np.int64)
    previous: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
    for i, size in enumerate(sizes.tolist()):
        take = 0
        if previous.size:
            fraction = min(1.0, rng.exponential(params.correlation))
            take = min(round(fraction * size), previous.size, size)
        inherited = rng.choice(previous, size=take, replace=False) if take else previous[:0]
        pool = np.setdiff1d(np.arange(n_items, dtype=np.int64), inherited, assume_unique=True)
        fresh = rng.choice(pool, size=size - take, replace=False)
        chosen = np.sort(np.concatenate([inherited, fresh]))
        items[i, :size] = chosen
        previous = chosen
    weights = rng.exponential(1.0, size=count)
    weights /= weights.sum()
    corruption = np.clip(
        rng.normal(params.corruption_mean, params.corruption_sd, size=count), 0.0, 0.95
    )
    return _Patterns(items=items, sizes=sizes, weights=weights, corruption=corruption)


def _block(
    params: QuestParameters, patterns: _Patterns, rows: int, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """``rows`` baskets as a boolean matrix (step 3 of the module docstring)."""
    out = np.zeros((rows, params.n_items), dtype=bool)
    remaining = np.maximum(1, rng.poisson(params.avg_basket_size, size=rows)).astype(np.int64)
    active = np.arange(rows, dtype=np.int64)
    cumulative = np.cumsum(patterns.weights)
    cumulative[-1] = 1.0
    width = patterns.items.shape[1]
    for _ in range(_MAX_ROUNDS):
        if active.size == 0:
            break
        chosen = np.minimum(
            np.searchsorted(cumulative, rng.random(active.size), side="right"),
            cumulative.size - 1,
        )
        sizes = patterns.sizes[chosen]
        level = patterns.corruption[chosen]
        # items dropped while U < c: P(drop >= j) = c^j, a geometric count
        u = 1.0 - rng.random(active.size)  # (0, 1]
        with np.errstate(divide="ignore"):
            drops = np.where(level > 0.0, np.floor(np.log(u) / np.log(level)), 0.0)
        kept = np.maximum(sizes - np.minimum(drops, sizes).astype(np.int64), 0)
        # keep a uniformly random ``kept`` of the pattern's items: the smallest random keys
        keys = rng.random((active.size, width))
        keys[patterns.items[chosen] < 0] = np.inf
        order = np.argsort(keys, axis=1)
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(width)[None, :], axis=1)
        take = rank < kept[:, None]
        fits = kept <= remaining[active]
        empty = ~out[active].any(axis=1)
        added = fits | empty | (rng.random(active.size) < 0.5)
        take &= added[:, None]
        row_index = np.broadcast_to(active[:, None], take.shape)[take]
        out[row_index, patterns.items[chosen][take]] = True
        remaining[active] -= kept
        # a basket ends when full or after a pattern that did not fit; an empty basket
        # (every pattern so far corrupted away) keeps drawing
        now_empty = ~out[active].any(axis=1)
        still = (fits & (remaining[active] > 0)) | now_empty
        active = active[still]
    return out


def quest_chunks(
    params: QuestParameters, seed: int, rows: int | None = None
) -> Iterator[ByteMatrix]:
    """The packed baskets of :func:`quest_baskets`, one block of :data:`QUEST_BLOCK` at a time.

    ``rows`` (at most ``params.n_baskets``) stops early: the first ``rows`` baskets
    are the same as those of the full data set.
    """
    total = params.n_baskets if rows is None else min(int(rows), params.n_baskets)
    root = np.random.SeedSequence(seed)
    pattern_seed, block_seeds = root.spawn(2)
    patterns = _patterns(params, np.random.Generator(np.random.PCG64(pattern_seed)))
    n_blocks = math.ceil(params.n_baskets / QUEST_BLOCK)
    seeds = block_seeds.spawn(n_blocks)
    done = 0
    for block_seed in seeds:
        if done >= total:
            break
        # a whole block is always drawn (its rows depend on its size), then cut
        size = min(QUEST_BLOCK, params.n_baskets - done)
        rng = np.random.Generator(np.random.PCG64(block_seed))
        block = _block(params, patterns, size, rng)[: total - done]
        yield np.packbits(block, axis=1)
        done += block.shape[0]


def quest_baskets(params: QuestParameters, seed: int) -> ByteMatrix:
    """``params.n_baskets`` synthetic baskets, packed (``n × ceil(n_items/8)`` uint8)."""
    return np.concatenate(list(quest_chunks(params, seed)), axis=0)


def item_names(n_items: int, prefix: str = "item") -> list[str]:
    """Catalogue names ``item0001, item0002, ...`` (zero-padded, so they sort as numbers)."""
    width = max(4, len(str(n_items)))
    return [f"{prefix}{i + 1:0{width}d}" for i in range(n_items)]


def unpack_baskets(packed: ByteMatrix, n_items: int) -> NDArray[np.bool_]:
    """The ``n × n_items`` boolean matrix of packed baskets."""
    matrix: NDArray[np.bool_] = np.unpackbits(packed, axis=1, count=n_items).astype(bool)
    return matrix


def basket_lists(packed: ByteMatrix, names: Sequence[str]) -> list[list[str]]:
    """Each packed basket as the list of its items' names (for the SDK)."""
    matrix = unpack_baskets(packed, len(names))
    rows, cols = np.nonzero(matrix)
    out: list[list[str]] = [[] for _ in range(matrix.shape[0])]
    for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
        out[row].append(names[col])
    return out


def pack_baskets(baskets: Sequence[Sequence[Any]], catalogue: Sequence[Any]) -> ByteMatrix:
    """Pack baskets given as collections of catalogue entries.

    :class:`InvalidRecordError` for an item that is not in the catalogue (never dropped).
    """
    index = {item: j for j, item in enumerate(catalogue)}
    if len(index) != len(catalogue):
        raise ConfigurationError("the catalogue has duplicate items")
    lengths = np.fromiter((len(b) for b in baskets), dtype=np.int64, count=len(baskets))
    try:
        columns = np.fromiter(
            (index[item] for basket in baskets for item in basket),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
    except (KeyError, TypeError):
        bad = next(item for basket in baskets for item in basket if item not in index)
        raise InvalidRecordError(f"item {bad!r} is not in the catalogue") from None
    rows = np.repeat(np.arange(len(baskets), dtype=np.int64), lengths)
    return pack_positions(rows, columns, len(baskets), len(catalogue))


def pack_positions(
    rows: NDArray[np.int64], columns: NDArray[np.int64], n_rows: int, n_items: int
) -> ByteMatrix:
    """Packed ``n_rows × n_items`` bits with bit ``(rows[i], columns[i])`` set for each ``i``.

    Works on the packed bytes directly, so a wide catalogue never needs a dense matrix.
    """
    packed = np.zeros((n_rows, (n_items + 7) // 8), dtype=np.uint8)
    masks = (np.uint8(0x80) >> (columns & 7).astype(np.uint8)).astype(np.uint8)
    np.bitwise_or.at(packed, (rows, columns >> 3), masks)
    return packed


@dataclass(frozen=True, eq=False)
class BasketFile:
    """Baskets read from a file: packed bits and the item labels of the columns."""

    packed: ByteMatrix
    items: list[str]

    @property
    def n_baskets(self) -> int:
        return int(self.packed.shape[0])

    @property
    def n_items(self) -> int:
        return len(self.items)


def read_fimi(path: str | Path) -> BasketFile:
    """A FIMI-format file (one basket per line, space-separated integer item ids).

    The columns are the distinct ids that occur, in increasing order; their labels are
    the ids as text. Empty lines are empty baskets.
    """
    text = Path(path).read_text(encoding="ascii")
    lines = text.splitlines()
    lengths = np.fromiter((len(line.split()) for line in lines), dtype=np.int64, count=len(lines))
    ids = np.array(text.split(), dtype=np.int64)
    if ids.size != int(lengths.sum()):  # pragma: no cover - split() is line-consistent
        raise InvalidRecordError(f"{path}: could not parse the baskets")
    distinct, columns = np.unique(ids, return_inverse=True)
    rows = np.repeat(np.arange(len(lines), dtype=np.int64), lengths)
    packed = pack_positions(rows, columns.astype(np.int64), len(lines), int(distinct.size))
    return BasketFile(packed, [str(i) for i in distinct.tolist()])
