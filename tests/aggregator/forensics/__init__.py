"""What an attacker who reads the database's files learns about arrival order.

The attacker knows the stored report ids (anyone who can read the files can read the
table) and wants two things the service promises not to keep: the order in which the
reports arrived, and which reports came in one request (one device's batch, or one
connection that a proxy log ties to an address and a time). Each reader in this package
turns raw bytes into a *recovered position* per report id (a sortable key: a commit in
the SQLite write-ahead log, a cell's place in its page, a PostgreSQL ``xmin`` or
``ctid``); :func:`measure` compares the recovered positions with the true arrival order:

* ``spearman``: the rank correlation of recovered position and arrival index, ties
  averaged (0 when the attacker recovered no order at all);
* ``adjacent_same_request``: sort the reports by recovered position (ties broken by a
  seeded shuffle) and take the share of neighbouring pairs that came in one request;
  ``base_rate`` is the same share for a random order, ``Σ s_r(s_r−1) / (N(N−1))``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.reports import encode_bits

from ..conftest import packed_reports

Position = tuple[Any, ...]


def seeded_requests(
    config: CollectionConfig, count: int, seed: int, largest: int = 40, smallest: int = 1
) -> list[list[dict[str, str]]]:
    """``count`` requests of ``smallest`` to ``largest`` wire reports each, ids and bits
    from ``seed`` (ids as the SDK makes them: 16 random bytes, URL-safe base64)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(smallest, largest + 1, size=count)
    packed = packed_reports(config, int(sizes.sum()), seed)
    requests: list[list[dict[str, str]]] = []
    start = 0
    for size in sizes.tolist():
        requests.append(
            [
                {
                    "id": base64.urlsafe_b64encode(rng.bytes(16)).rstrip(b"=").decode(),
                    "config_hash": config.config_hash,
                    "bits": encode_bits(row.tobytes()),
                }
                for row in packed[start : start + size]
            ]
        )
        start += size
    return requests


@dataclass(frozen=True)
class Arrival:
    """The true history: every stored id in arrival order and the request it came in."""

    ids: list[str]
    request: list[int]

    @classmethod
    def of_requests(cls, requests: Sequence[Sequence[dict[str, str]]]) -> Arrival:
        ids = [report["id"] for batch in requests for report in batch]
        numbers = [k for k, batch in enumerate(requests) for _ in batch]
        return cls(ids=ids, request=numbers)


@dataclass(frozen=True)
class Leak:
    """How much of the arrival order one reader recovered."""

    source: str
    recovered: int
    spearman: float
    adjacent_same_request: float
    base_rate: float

    def line(self) -> str:
        return (
            f"{self.source}: {self.recovered} ids placed, Spearman {self.spearman:+.3f}, "
            f"same-request neighbours {self.adjacent_same_request:.3f} "
            f"(random order: {self.base_rate:.3f})"
        )


def measure(
    source: str, arrival: Arrival, recovered: Mapping[str, Position], seed: int = 0
) -> Leak:
    """Compare ``recovered`` positions with the true ``arrival`` (ids not placed are left out)."""
    order = {report_id: k for k, report_id in enumerate(arrival.ids)}
    placed = [report_id for report_id in arrival.ids if report_id in recovered]
    request = {report_id: arrival.request[order[report_id]] for report_id in placed}
    if len(placed) < 2:
        return Leak(source, len(placed), 0.0, 0.0, 0.0)
    keys = sorted({recovered[report_id] for report_id in placed})
    rank = {key: k for k, key in enumerate(keys)}
    positions = np.array([rank[recovered[report_id]] for report_id in placed])
    truth = np.array([order[report_id] for report_id in placed])
    rho = 0.0 if len(keys) < 2 else float(spearmanr(positions, truth).statistic)

    tiebreak = np.random.default_rng(seed).permutation(len(placed))
    sequence = [placed[k] for k in np.lexsort((tiebreak, positions))]
    same = [request[a] == request[b] for a, b in pairwise(sequence)]
    sizes = np.bincount([request[report_id] for report_id in placed]).astype(float)
    n = float(len(placed))
    base = float((sizes * (sizes - 1)).sum() / (n * (n - 1)))
    return Leak(source, len(placed), rho, float(np.mean(same)), base)
