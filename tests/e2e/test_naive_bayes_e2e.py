"""Naive Bayes end to end on the car data: SDK → HTTP → aggregator (SQLite) → model.

Clients report the training split (a fixed seeded split of the 1,728 records, only the
training part replicated); the analyst trains over HTTP, classifies the held-out split
over HTTP, and gets the same answers from the exported scikit-learn ``CategoricalNB``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.settings import Settings
from ldp_client import AsyncLDPClient
from ldp_shared.analyses import naive_bayes as nb
from ldp_shared.rand import seeded_rng
from ldp_simulation.datasets import load_car

pytestmark = pytest.mark.e2e

ADMIN = "admin-token-for-tests"
ANALYST = "analyst-token-for-tests"
COPIES = 30  # 41,460 training clients
MAJORITY = 1210 / 1728  # always answering "unacc"


async def _run(database: Path, budget: str, epsilon: float) -> dict[str, Any]:
    settings = Settings(
        database_url=database_url(database), admin_token=ADMIN, analyst_token=ANALYST
    )
    app = create_app(settings)
    car = load_car()
    train, test = nb.holdout_split(car.records)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        base = "http://aggregator.test"
        async with AsyncLDPClient(base, token=ADMIN, transport=transport) as admin:
            await admin.create_collection(
                {
                    "name": "car-nb",
                    "epsilon": epsilon,
                    "budget": budget,
                    "label": "class",
                    "release": {"min_reports": 1000},
                    "attributes": [
                        {"name": n, "domain": d, "mechanism": "oue"} for n, d in car.domains.items()
                    ],
                }
            )
        async with AsyncLDPClient(base, transport=transport, rng=seeded_rng(31)) as client:
            summary = await client.submit("car-nb", train * COPIES, batch_size=5000)
            assert summary.accepted == len(train) * COPIES
        async with AsyncLDPClient(base, token=ANALYST, transport=transport) as analyst:
            model = await analyst.train_naive_bayes("car-nb")
            fetched = await analyst.get_naive_bayes("car-nb", model.id)
            predicted = await analyst.predict_naive_bayes("car-nb", model.id, test)
            exported = await analyst.export_naive_bayes("car-nb", model.id)
            ids = await analyst.list_naive_bayes("car-nb")
    return {
        "model": model,
        "fetched": fetched,
        "predicted": predicted,
        "exported": exported,
        "ids": ids,
        "test": test,
    }


@pytest.mark.parametrize(("budget", "epsilon"), [("sample", 4.0), ("split", 8.0)])
def test_naive_bayes_over_http(tmp_path: Path, budget: str, epsilon: float) -> None:
    out = asyncio.run(_run(tmp_path / "agg.db", budget, epsilon))
    model, test = out["model"], out["test"]
    assert out["fetched"] == model and out["ids"] == [model.id]
    assert model.budget == budget and model.epsilon == pytest.approx(epsilon)
    assert model.n_reports == 1382 * COPIES
    labels = [p.predicted for p in out["predicted"].predictions]
    accuracy = float(np.mean([p == r["class"] for p, r in zip(labels, test, strict=True)]))
    assert accuracy >= 0.75 > MAJORITY, accuracy
    # the exported estimator answers exactly as the server
    estimator = nb.to_categorical_nb(out["exported"])
    assert list(estimator.predict(nb.encode_queries(model, test))) == labels
