"""One record at a time, at what its mathematics costs (GRR and unary encoding).

Perturbing one record through the vectorised codec pays a dozen numpy calls on arrays
of one element. For a collection whose attributes are all reported by GRR or unary
encoding (budget ``split``, no label), :class:`RecordPath` does it in plain Python
over randomness drawn in bulk ahead of the record:

* GRR: per answer, ``-1`` (keep the true value) or the rank of the reported value among
  the others (:meth:`~ldp_shared.mechanisms.grr.GeneralizedRandomizedResponse.
  draw_noise`); the answer's bytes come from a table of the ``d`` segments;
* unary encoding: per answer, a packed row of Bernoulli(q) bits and the Bernoulli(p)
  bit that replaces the true one (:meth:`~ldp_shared.mechanisms.unary.UnaryEncoding.
  draw_noise`).

These are the draws the vectorised path makes, by the same functions, only earlier:
the answers have the same distribution. Each draw is used once (``list.pop``, atomic
under the GIL). The draws are kept per generator, for the last :data:`GENERATORS`
generators used; those of the process's secure generator are dropped in a forked
child, which has a generator of its own (:func:`ldp_shared.rand.shared_secure_rng`).

A record this path does not take (a missing or unknown attribute, a value outside its
domain) is left to the vectorised path, which says what is wrong with it.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ldp_shared.collection import CollectionConfig
from ldp_shared.mechanisms.categorical import CategoricalSpec, pack_index
from ldp_shared.mechanisms.grr import GeneralizedRandomizedResponse
from ldp_shared.mechanisms.unary import UnaryEncoding

__all__ = ["GENERATORS", "RecordPath", "record_path"]

GENERATORS = 8
"""Generators whose bulk draws a path keeps at once (the least recently used go)."""
FIRST_BLOCK = 16
LAST_BLOCK = 1024


class _Draws:
    """Randomness of one attribute drawn in blocks that double up to :data:`LAST_BLOCK`."""

    def __init__(self, draw: Callable[[int], list[Any]]) -> None:
        self._draw = draw
        self._block = FIRST_BLOCK
        self._items: list[Any] = []

    def take(self) -> Any:
        try:
            return self._items.pop()
        except IndexError:
            fresh = self._draw(self._block)
            self._block = min(2 * self._block, LAST_BLOCK)
            self._items.extend(fresh)
            return self._items.pop()


def _grr_draws(randomizer: GeneralizedRandomizedResponse, rng: np.random.Generator) -> _Draws:
    def draw(n: int) -> list[Any]:
        noise: list[Any] = randomizer.draw_noise(n, rng).tolist()
        return noise

    return _Draws(draw)


def _ue_draws(randomizer: UnaryEncoding, rng: np.random.Generator) -> _Draws:
    def draw(n: int) -> list[Any]:
        rows, true_bits = randomizer.draw_noise(n, rng)
        return list(zip([row.tobytes() for row in rows], true_bits.tolist(), strict=True))

    return _Draws(draw)


class RecordPath:
    """The packed report of one record of a GRR/UE collection, without numpy per record."""

    def __init__(self, config: CollectionConfig) -> None:
        self._count = len(config.record_names)
        specs = {spec.name: spec for spec in config.spec.attributes}
        self._parts: list[tuple[str, dict[str, int], str, list[bytes]]] = []
        self._makers: list[Callable[[np.random.Generator], _Draws]] = []
        for attribute, randomizer in zip(config.attributes, config.randomizers, strict=True):
            spec = specs[attribute.name]
            assert isinstance(spec, CategoricalSpec)
            if isinstance(randomizer, GeneralizedRandomizedResponse):
                table = pack_index(np.arange(randomizer.d), attribute.byte_length)
                rows = [row.tobytes() for row in table]
                self._parts.append((attribute.name, spec.value_lookup, "grr", rows))
                self._makers.append(functools.partial(_grr_draws, randomizer))
            else:
                assert isinstance(randomizer, UnaryEncoding)
                self._parts.append((attribute.name, spec.value_lookup, "ue", []))
                self._makers.append(functools.partial(_ue_draws, randomizer))
        self._draws: OrderedDict[int, tuple[np.random.Generator, list[_Draws]]] = OrderedDict()
        self._lock = threading.Lock()
        self._last: tuple[np.random.Generator | None, list[_Draws]] = (None, [])

    def _draws_of(self, rng: np.random.Generator) -> list[_Draws]:
        last = self._last  # one tuple, read at once: safe across threads
        if last[0] is rng:
            return last[1]
        with self._lock:
            found = self._draws.get(id(rng))
            if found is None or found[0] is not rng:
                found = (rng, [make(rng) for make in self._makers])
                self._draws[id(rng)] = found
                while len(self._draws) > GENERATORS:
                    self._draws.popitem(last=False)
            self._last = found
            return found[1]

    def packed(self, record: Mapping[str, Any], rng: np.random.Generator) -> bytes | None:
        """The packed perturbed report of ``record``, or ``None`` if this path does not
        take it (the vectorised path then checks it and says what is wrong)."""
        if len(record) != self._count:  # then every name found means no other is there
            return None
        draws = self._draws_of(rng)
        try:
            if self._count == 1:
                name, lookup, kind, table = self._parts[0]
                return _answer(lookup[record[name]], kind, table, draws[0])
            return b"".join(
                [
                    _answer(lookup[record[name]], kind, table, each)
                    for (name, lookup, kind, table), each in zip(self._parts, draws, strict=True)
                ]
            )
        except (KeyError, TypeError):
            return None


def _answer(index: int, kind: str, table: list[bytes], draws: _Draws) -> bytes:
    """The segment of one attribute whose true value is ``index``."""
    if kind == "grr":
        noise = draws.take()
        return table[index if noise < 0 else noise + (noise >= index)]
    row, true_bit = draws.take()
    answer = bytearray(row)
    mask = 0x80 >> (index & 7)
    if true_bit:
        answer[index >> 3] |= mask
    else:
        answer[index >> 3] &= ~mask & 0xFF
    return bytes(answer)


def _takes(config: CollectionConfig) -> bool:
    """Whether :class:`RecordPath` handles the collection."""
    if config.label is not None or config.selector_bytes or config.budget != "split":
        return False
    offset = 0
    for attribute, randomizer in zip(config.attributes, config.randomizers, strict=True):
        if type(randomizer) not in (GeneralizedRandomizedResponse, UnaryEncoding):
            return False
        if attribute.byte_offset != offset:
            return False
        offset += attribute.byte_length
    return offset == config.report_bytes and len(config.attributes) == len(config.record_names)


_PATHS: dict[int, tuple[CollectionConfig, RecordPath | None]] = {}
_PATHS_LOCK = threading.Lock()
MAX_PATHS = 64


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_PATHS.clear)


def record_path(config: CollectionConfig) -> RecordPath | None:
    """The config's :class:`RecordPath` (built once per config object), or ``None``."""
    found = _PATHS.get(id(config))
    if found is not None and found[0] is config:
        return found[1]
    path = RecordPath(config) if _takes(config) else None
    with _PATHS_LOCK:
        _PATHS[id(config)] = (config, path)
        while len(_PATHS) > MAX_PATHS:
            _PATHS.pop(next(iter(_PATHS)))
    return path
