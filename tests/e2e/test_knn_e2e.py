"""kNN end to end on breast cancer: SDK → HTTP → aggregator (SQLite) → classification.

The data is the repository's bundled UCI Breast Cancer Wisconsin (Diagnostic)
(``ldp_simulation.datasets.load_breast_cancer``, see its LICENSE.md), split 70/30 with a
fixed seed.
The analyst creates a kNN collection over the 30 features: public bounds (the training
range widened by 10% each side) and public centre and scale (the training mean and
standard deviation). Devices report the training split, replicated, through the SDK's
``submit_knn`` (cells computed and privatized on the device); the analyst classifies the
held-out split (clipped into the bounds) through ``classify_knn``. The accuracy must be
well above always answering the majority class.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_client import AsyncLDPClient
from ldp_shared.analyses.knn.collection import collection_spec
from ldp_shared.knn_cells import KnnCells
from ldp_shared.rand import seeded_rng
from ldp_simulation.datasets import load_breast_cancer

pytestmark = pytest.mark.e2e

ADMIN = "admin-token-for-tests"
ANALYST = "analyst-token-for-tests"
COPIES = 60  # 23,880 devices
EPSILON = 5.0
CLASSES = ["malignant", "benign"]


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = load_breast_cancer()
    x = np.array(data.values, dtype=np.float64)
    y = np.array([CLASSES.index(label) for label in data.labels])
    order = seeded_rng(2024).permutation(len(y))
    cut = int(0.7 * len(y))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def cells_for(train: np.ndarray) -> KnnCells:
    lo, hi = train.min(axis=0), train.max(axis=0)
    pad = 0.1 * (hi - lo)
    mean, std = train.mean(axis=0), train.std(axis=0)
    features = [
        {
            "name": f"f{j}",
            "lo": float(lo[j] - pad[j]),
            "hi": float(hi[j] + pad[j]),
            "centre": float(mean[j]),
            "spread": float(std[j]),
        }
        for j in range(train.shape[1])
    ]
    return KnnCells.model_validate({"features": features, "tables": 4, "bits": 8, "seed": 1})


async def _run(database: Path) -> dict[str, Any]:
    settings = Settings(
        database_url=f"sqlite:///{database}", admin_token=ADMIN, analyst_token=ANALYST
    )
    app = create_app(settings)
    train_x, train_y, test_x, test_y = split()
    cells = cells_for(train_x)
    spec = collection_spec("wdbc", cells, EPSILON, "diagnosis", CLASSES, 5000)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        base = "http://aggregator.test"
        async with AsyncLDPClient(base, token=ADMIN, transport=transport) as admin:
            await admin.create_collection(spec)
        devices_x = np.tile(train_x, (COPIES, 1))
        labels = [CLASSES[int(c)] for c in np.tile(train_y, COPIES)]
        async with AsyncLDPClient(base, transport=transport, rng=seeded_rng(5)) as device:
            summary = await device.submit_knn("wdbc", devices_x, labels, batch_size=5000)
            assert summary.accepted == len(labels)
        space = cells.space
        queries = np.clip(test_x, space.lo, space.hi)
        async with AsyncLDPClient(base, token=ANALYST, transport=transport) as analyst:
            answer = await analyst.classify_knn("wdbc", queries.tolist(), k=25 * COPIES)
    predicted = np.array([CLASSES.index(p.predicted) for p in answer.predictions])
    return {
        "accuracy": float(np.mean(predicted == test_y)),
        "majority": float(max(np.mean(test_y), 1 - np.mean(test_y))),
        "answer": answer,
    }


def test_breast_cancer_held_out_split_well_above_the_majority(tmp_path: Path) -> None:
    result = asyncio.run(_run(tmp_path / "agg.db"))
    answer = result["answer"]
    assert answer.n_reports == 398 * COPIES and answer.epsilon == pytest.approx(EPSILON)
    assert len(answer.predictions) == 171
    assert all(len(p.scores) == len(p.stderr) == 2 for p in answer.predictions)
    assert result["accuracy"] >= result["majority"] + 0.15, result
