"""Block draws for one record at a time: each draw handed out once, per generator, and
none reused in a forked child."""

from __future__ import annotations

import numpy as np

from ldp_shared import bulk_draws
from ldp_shared.bulk_draws import GENERATORS, LAST_BLOCK, BulkDraws
from ldp_shared.rand import seeded_rng


def test_bulk_draws_are_used_once_per_generator() -> None:
    counter = iter(range(10**6))

    def draw(n: int, gen: np.random.Generator) -> list[int]:
        return [next(counter) for _ in range(n)]

    draws: BulkDraws[int] = BulkDraws(draw)
    a, b = seeded_rng(0), seeded_rng(0)
    taken = [draws.take(a) for _ in range(100)] + [draws.take(b) for _ in range(40)]
    assert len(set(taken)) == 140  # no draw handed out twice, across generators
    for stream_rng in (a, b):
        assert draws._streams[id(stream_rng)].rng is stream_rng
    bulk_draws._forks[0] += 1  # as in a forked child: the parent's draws are dropped
    try:
        after = draws.take(a)
        assert after >= max(taken) + 1  # a fresh block, not one of the parent's leftovers
    finally:
        bulk_draws._forks[0] -= 1


def test_blocks_double_up_to_the_last_and_generators_are_bounded() -> None:
    sizes: list[int] = []

    def draw(n: int, gen: np.random.Generator) -> list[int]:
        sizes.append(n)
        return list(range(n))

    draws: BulkDraws[int] = BulkDraws(draw)
    gen = seeded_rng(1)
    for _ in range(5000):
        draws.take(gen)
    assert sizes[:3] == [16, 32, 64] and max(sizes) == LAST_BLOCK
    for seed in range(3 * GENERATORS):
        draws.take(seeded_rng(seed))
    assert len(draws._streams) <= GENERATORS
