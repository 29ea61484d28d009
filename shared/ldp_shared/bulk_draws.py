"""Randomness for one record at a time, drawn in blocks ahead of the records.

Perturbing one record through a mechanism's vectorised code pays a dozen numpy calls on
arrays of one element. A one-record path instead takes its noise from a block drawn
earlier by the same function the vectorised path uses (so the answers have the same
distribution) and does the rest in Python numbers. :class:`BulkDraws` keeps those blocks
per generator: each draw is handed out once, and a forked child never reuses a draw its
parent may also use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["FIRST_BLOCK", "GENERATORS", "LAST_BLOCK", "BulkDraws"]

FIRST_BLOCK = 16
LAST_BLOCK = 1024
"""Sizes of the blocks of draws: the first, doubling up to the last."""
GENERATORS = 8
"""Generators whose bulk draws one :class:`BulkDraws` keeps at once (the first met go first)."""
_forks = [0]  # bumped in a forked child: bulk draws made before the fork are dropped
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))

T = TypeVar("T")


class _Stream:
    """The bulk draws of one generator."""

    __slots__ = ("block", "forks", "items", "rng")

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.block = FIRST_BLOCK
        self.items: list[Any] = []
        self.forks = _forks[0]


class BulkDraws(Generic[T]):
    """Randomness of one-record calls, drawn from each generator in blocks.

    ``draw(n, rng)`` returns ``n`` independent draws (a list); :meth:`take` hands them
    out one at a time, each once (``list.pop``, atomic under the GIL), and draws a new
    block, twice the last up to :data:`LAST_BLOCK`, when they run out. Draws are kept
    per generator, for the last :data:`GENERATORS` used; a forked child drops those
    made before the fork (the parent may use them too).
    """

    def __init__(self, draw: Callable[[int, np.random.Generator], list[T]]) -> None:
        self._draw = draw
        self._streams: dict[int, _Stream] = {}
        self._last: _Stream | None = None

    def take(self, rng: np.random.Generator) -> T:
        stream = self._last
        if stream is None or stream.rng is not rng or stream.forks != _forks[0]:
            stream = self._stream(rng)
        try:
            item: T = stream.items.pop()
        except IndexError:
            fresh = self._draw(stream.block, rng)
            stream.block = min(2 * stream.block, LAST_BLOCK)
            stream.items.extend(fresh)
            item = stream.items.pop()
        return item

    def _stream(self, rng: np.random.Generator) -> _Stream:
        streams = self._streams
        found = streams.get(id(rng))
        if found is None or found.rng is not rng or found.forks != _forks[0]:
            found = _Stream(rng)
            streams.pop(id(rng), None)
            streams[id(rng)] = found
            while len(streams) > GENERATORS:
                try:
                    streams.pop(next(iter(streams)), None)
                except (RuntimeError, StopIteration):
                    break
        self._last = found
        return found
