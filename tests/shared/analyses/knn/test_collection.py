"""A kNN collection: the SDK's privatizer and the aggregator's statistics give the cell
protocol's counts, and the classifier answers from them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldp_shared.analyses.joint import Sums
from ldp_shared.analyses.knn.collection import (
    classify,
    collection_spec,
    counts_from_collection,
    protocol_of,
)
from ldp_shared.codec import Privatizer, decode_reports
from ldp_shared.collection import CollectionConfig, build_config
from ldp_shared.errors import InsufficientReportsError, InvalidQueryError
from ldp_shared.knn_cells import KnnCells, device_columns
from ldp_shared.rand import seeded_rng
from ldp_shared.wire.knn import KnnQuery

CLASSES = ["no", "yes"]
CELLS = KnnCells.model_validate(
    {
        "features": [
            {"name": "a", "lo": -4, "hi": 4, "centre": 0, "spread": 1},
            {"name": "b", "lo": -4, "hi": 4, "centre": 0, "spread": 1},
            {"name": "colour", "domain": ["red", "green", "blue"]},
        ],
        "tables": 2,
        "bits": 4,
        "seed": 3,
    }
)


def points(n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    rng = seeded_rng(seed)
    x = np.column_stack([rng.uniform(-3, 3, (n, 2)), rng.integers(0, 3, n)])
    return x, [CLASSES[int(a + b > 0)] for a, b, _ in x]


def collected(n: int, min_reports: int = 1) -> tuple[CollectionConfig, Sums]:
    config = build_config(collection_spec("knn-cells", CELLS, 4.0, "label", CLASSES, min_reports))
    x, labels = points(n, 12)
    columns = device_columns(CELLS, "label", x, labels)
    reports = Privatizer(config).privatize_columns(columns, seeded_rng(4))
    return config, decode_reports(config, reports).sums


def test_counts_match_the_truth_and_classify() -> None:
    n = 40_000
    config, sums = collected(n)
    assert config.epsilon == pytest.approx(4.0)
    protocol = protocol_of(config)
    counts = counts_from_collection(protocol, config, n, sums)
    assert int(counts.reports.sum()) == n
    # each table's debiased total is n_τ up to its noise (fixed seed, 5 standard errors)
    est = protocol.cell_counts(counts)
    p, q = protocol.p, protocol.q
    sd = np.sqrt(counts.reports * protocol.domain * q * (1 - q)) / (p - q)
    assert (np.abs(est.sum(axis=(1, 2)) - counts.reports) < 5 * sd).all()
    x, labels = points(300, 5)
    answer = classify(config, n, sums, KnnQuery(points=x.tolist(), k=200))
    hits = [a.predicted == b for a, b in zip(answer.predictions, labels, strict=True)]
    assert float(np.mean(hits)) > 0.8
    first = answer.predictions[0]
    assert len(first.scores) == len(first.stderr) == 2 and min(first.stderr) > 0


@pytest.mark.parametrize(
    ("rows", "k", "message"),
    [
        ([[0.0, 0.0]], 5, "3 coordinates"),
        ([[0.0, math.nan, 1.0]], 5, "NaN"),
        ([[0.0, 0.0, 3.0]], 5, "value indices"),
        ([[0.0, 0.0, 1.0]], 0, "k must"),
        ([[0.0, 0.0, 1.0]], -2, "k must"),
    ],
)
def test_bad_queries(rows: list[list[float]], k: int, message: str) -> None:
    config, sums = collected(200)
    with pytest.raises(InvalidQueryError, match=message):
        classify(config, 200, sums, KnnQuery(points=rows, k=k))


def test_a_point_outside_the_bounds_is_clipped_and_flagged_not_refused() -> None:
    """As a device clips its own values: the point scores as the boundary point does."""
    config, sums = collected(200)
    answer = classify(config, 200, sums, KnnQuery(points=[[0.0, 5.0, 1.0], [0.0, 4.0, 1.0]], k=5))
    outside, edge = answer.predictions
    assert outside.clipped == ["b"] and edge.clipped == []
    assert outside.scores == edge.scores and outside.predicted == edge.predicted


def test_below_the_release_minimum_and_a_plain_collection_are_refused() -> None:
    config, sums = collected(50, min_reports=100)
    with pytest.raises(InsufficientReportsError, match="at least 100"):
        classify(config, 50, sums, KnnQuery(points=[[0.0, 0.0, 1.0]], k=5))
    plain = build_config(
        collection_spec("x", CELLS, 4.0, "label", CLASSES, 1).model_copy(update={"knn": None})
    )
    with pytest.raises(InvalidQueryError, match="not a kNN collection"):
        protocol_of(plain)


def test_the_spec_must_match_its_cells() -> None:
    spec = collection_spec("x", CELLS, 4.0, "label", CLASSES, 1).model_dump()
    spec["attributes"] = spec["attributes"][1:]
    with pytest.raises(ValueError, match="one per table"):
        type(collection_spec("x", CELLS, 4.0, "label", CLASSES, 1)).model_validate(spec)
    spec = collection_spec("x", CELLS, 4.0, "label", CLASSES, 1).model_dump()
    spec["budget"] = "split"
    with pytest.raises(ValueError, match="sample"):
        type(collection_spec("x", CELLS, 4.0, "label", CLASSES, 1)).model_validate(spec)
