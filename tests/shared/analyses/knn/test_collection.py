"""The cell protocol through a label collection: the SDK's privatizer and the
aggregator's statistics give the protocol's counts, and a classifier from them."""

from __future__ import annotations

import numpy as np
import pytest

from ldp_shared.analyses.joint import Sums
from ldp_shared.analyses.knn import CellProtocol
from ldp_shared.analyses.knn.collection import (
    cell_records,
    collection_spec,
    counts_from_collection,
)
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import ConfigurationError, InsufficientReportsError
from ldp_shared.rand import seeded_rng

CLASSES = ["no", "yes"]


def world(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = seeded_rng(12)
    z = rng.standard_normal((n, 3))
    return z, (z[:, 0] + z[:, 1] > 0).astype(np.int64)


def collected(
    protocol: CellProtocol, n: int, min_reports: int = 1
) -> tuple[CollectionConfig, Sums]:
    config = build_config(collection_spec("knn-cells", protocol, "label", CLASSES, min_reports))
    z, y = world(n)
    columns = cell_records(protocol, z, y.tolist(), "label", CLASSES)
    reports = Privatizer(config).privatize_columns(columns, seeded_rng(4))
    return config, decode_reports(config, reports).sums


def test_counts_match_the_truth_and_classify() -> None:
    protocol = CellProtocol(3, 2, 4.0, tables=2, bits=4, mechanism="oue")
    n = 40_000
    config, sums = collected(protocol, n)
    assert config.epsilon == pytest.approx(4.0)
    counts = counts_from_collection(protocol, config, n, sums)
    assert int(counts.reports.sum()) == n
    # each table's debiased total is n_τ up to its noise (fixed seed, 5 standard errors)
    est = protocol.cell_counts(counts)
    p, q = protocol.p, protocol.q
    sd = np.sqrt(counts.reports * protocol.domain * q * (1 - q)) / (p - q)
    assert (np.abs(est.sum(axis=(1, 2)) - counts.reports) < 5 * sd).all()
    queries = seeded_rng(5).standard_normal((500, 3))
    truth = (queries[:, 0] + queries[:, 1] > 0).astype(np.int64)
    accuracy = float((protocol.scores(counts, queries, k=200).predicted == truth).mean())
    assert accuracy > 0.8


def test_below_the_release_minimum_and_a_foreign_protocol_are_refused() -> None:
    protocol = CellProtocol(3, 2, 4.0, tables=2, bits=4, mechanism="oue")
    config, sums = collected(protocol, 50, min_reports=100)
    with pytest.raises(InsufficientReportsError, match="at least 100"):
        counts_from_collection(protocol, config, 50, sums)
    other = CellProtocol(3, 2, 2.0, tables=2, bits=4, mechanism="oue")
    config, sums = collected(protocol, 50)
    with pytest.raises(ConfigurationError):
        counts_from_collection(other, config, 50, sums)
    with pytest.raises(ConfigurationError):
        collection_spec("x", CellProtocol(3, 2, 4.0, bits=2, mechanism="grr"), "l", CLASSES, 1)
