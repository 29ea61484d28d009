"""Collections the dashboard tests look at, made through the public API (any client
with ``post``: a TestClient or an httpx.Client on a served app)."""

from __future__ import annotations

import csv
import io
from typing import Any, Protocol

from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_simulation.datasets import load_car

from ..conftest import ADMIN_TOKEN, make_records, report_dicts, spec_payload
from ..test_naive_bayes_api import nb_spec

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CAR = load_car()
SURVEY_REPORTS = 400
WAITING_REPORTS = 37
WAITING_MINIMUM = 100
CAR_MINIMUM = 500
"""Below the fewest reports (557) that carry one feature of ``car-nb``: under the
``sample`` budget a feature's frequencies, and so its model, need that many."""


class Poster(Protocol):
    def post(self, url: str, *, json: Any = None, headers: Any = None) -> Any: ...


def _create(client: Poster, spec: dict[str, Any]) -> CollectionConfig:
    response = client.post("/v1/collections", json=spec, headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def _upload(client: Poster, config: CollectionConfig, records: list[dict[str, Any]]) -> None:
    packed = Privatizer(config).privatize_many(records, rng=seeded_rng(11))
    reports = report_dicts(config, packed)
    for start in range(0, len(reports), 2000):
        body = {"reports": reports[start : start + 2000]}
        response = client.post(f"/v1/collections/{config.name}/reports", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["accepted"] == len(body["reports"])


def populate(client: Poster) -> None:
    """``survey`` (OUE, GRR, MASK; released), ``car-nb`` (naive Bayes; released) and
    ``waiting`` (37 of its 100 required reports)."""
    survey = _create(client, spec_payload(description="A survey of colours, ages and baskets"))
    _upload(client, survey, make_records(SURVEY_REPORTS, seed=3))
    car = _create(client, nb_spec(min_reports=CAR_MINIMUM))
    _upload(client, car, CAR.records * 2)
    waiting = _create(client, spec_payload(name="waiting", min_reports=WAITING_MINIMUM))
    _upload(client, waiting, make_records(WAITING_REPORTS, seed=4))


def car_test_csv(rows: int = 300) -> bytes:
    """A labelled test file of the car data (header: every attribute, label included)."""
    names = list(CAR.domains)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for record in CAR.records[:rows]:
        writer.writerow({name: record[name] for name in names})
    return buffer.getvalue().encode()
