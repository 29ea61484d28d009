"""An aggregator holding a collection of each kind the dashboard shows, made through the
public API (any client with ``post``/``put``/``get``): frequencies and MASK baskets
(``survey``, with a finished mining job), numbers (``numbers``), naive Bayes (``car-nb``,
with a trained model), kNN (``people``) and a training host (``trainer``, with a
finished training job). Also ``waiting`` (below its release minimum)."""

from __future__ import annotations

from typing import Any

from ldp_shared.rand import seeded_rng

from ..conftest import ADMIN, ANALYST, spec_payload
from ..test_api_knn import create as create_knn
from ..test_api_knn import upload as upload_knn
from ..training_helpers import answer, ask, jobs_path, records, spec
from ._data import populate
from .test_numeric_panels import _fill as fill_numbers

KINDS = {
    "survey": "frequencies + MASK baskets",
    "numbers": "frequencies + numeric",
    "car-nb": "naive Bayes",
    "people": "kNN",
    "trainer": "training + frequencies + MASK baskets",
}
"""The collections of each kind, with the kind the collections list gives them."""


def populate_every_kind(client: Any) -> None:
    populate(client)
    fill_numbers(client, "numbers", 3_000, seed=5)
    upload_knn(client, create_knn(client, min_reports=500), 4_000)
    created = client.post("/v1/collections", json=spec_payload(name="trainer"), headers=ADMIN)
    assert created.status_code == 201, created.text
    job = client.post(jobs_path("trainer"), json=spec(), headers=ANALYST).json()["id"]
    rng = seeded_rng(3)
    for record in records(60, seed=4):
        assert answer(client, ask(client, job, "trainer"), record, rng).status_code == 200
    mined = client.post(
        "/v1/collections/survey/itemsets",
        json={"min_support": 0.05, "min_confidence": 0.2, "wait_seconds": 60},
        headers=ANALYST,
    )
    assert mined.json()["status"] == "done", mined.text
    trained = client.post("/v1/collections/car-nb/models/naive-bayes", headers=ANALYST)
    assert trained.status_code == 201, trained.text
