"""Retention of whole periods over HTTP: merging old periods keeps every estimate over all
periods and moves the rows with them; dropping them removes their statistics and keeps
their ids, so a replay still counts once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.tables import collection_stats, reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.reports import ReportBatch

from .conftest import ADMIN, ANALYST, packed_reports, problem, report_dicts, spec_payload

DAY = (datetime.now(UTC) - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
HOURS = [DAY + timedelta(hours=h, minutes=20) for h in (1, 5, 9)]


def hourly(
    client: TestClient, engine: Engine
) -> tuple[CollectionConfig, list[list[dict[str, str]]]]:
    created = client.post("/v1/collections", json=spec_payload(period="hour"), headers=ADMIN)
    assert created.status_code == 201, created.text
    config = CollectionConfig.model_validate(created.json())
    sent = []
    for k, at in enumerate(HOURS):
        items = report_dicts(config, packed_reports(config, 40, seed=k))
        batch = ReportBatch.model_validate({"reports": items})
        assert ingest_batch(engine, load_collection(engine, "survey"), batch, at=at).accepted == 40
        sent.append(items)
    return config, sent


def estimate(client: TestClient, **params: Any) -> Any:
    return client.get(
        "/v1/collections/survey/frequencies",
        params={"attribute": "color", **params},
        headers=ANALYST,
    ).json()


def post(client: TestClient, what: str, body: dict[str, Any]) -> Any:
    return client.post(f"/v1/collections/survey/periods/{what}", json=body, headers=ADMIN)


def test_merging_hours_into_their_day_keeps_every_estimate(
    client: TestClient, engine: Engine
) -> None:
    hourly(client, engine)
    before = estimate(client)
    one_hour = DAY + timedelta(hours=5)
    assert (
        estimate(client, **{"from": one_hour.isoformat(), "to": one_hour.isoformat()})["n_reports"]
        == 40
    )
    merged = post(client, "merge", {"before": (DAY + timedelta(days=1)).isoformat(), "into": "day"})
    assert merged.status_code == 200, merged.text
    assert merged.json() == {
        "collection": "survey",
        "periods_before": 3,
        "periods_after": 1,
        "reports": 120,
    }
    assert estimate(client) == before  # the sums are the same sums
    with engine.connect() as connection:
        starts = set(connection.execute(select(collection_stats.c.period_start)).scalars())
        stamps = set(connection.execute(select(reports.c.received_day, reports.c.period_start)))
    day_start = int(DAY.timestamp())
    assert starts == {day_start} and stamps == {(DAY.date(), day_start)}
    # a window takes a merged period in whole when its start lies in the window
    first_hour = {"from": DAY.isoformat(), "to": DAY.isoformat()}
    assert estimate(client, **first_hour)["n_reports"] == 120
    again = post(client, "merge", {"before": (DAY + timedelta(days=1)).isoformat(), "into": "day"})
    assert again.json()["periods_after"] == 1 and again.json()["reports"] == 120


def test_dropping_periods_removes_their_statistics_and_keeps_their_ids(
    client: TestClient, engine: Engine
) -> None:
    _, sent = hourly(client, engine)
    refused = post(
        client, "drop", {"before": (DAY + timedelta(hours=6)).isoformat(), "confirm": "x"}
    )
    assert "not the collection's name" in problem(refused, 422, "invalid-query")
    assert estimate(client)["n_reports"] == 120
    dropped = post(
        client, "drop", {"before": (DAY + timedelta(hours=6)).isoformat(), "confirm": "survey"}
    )
    assert dropped.status_code == 200, dropped.text
    assert (dropped.json()["periods_after"], dropped.json()["reports"]) == (1, 80)
    assert estimate(client)["n_reports"] == 40
    replay = client.post("/v1/collections/survey/reports", json={"reports": sent[0]})
    assert replay.json()["duplicate"] == 40 and estimate(client)["n_reports"] == 40


def test_refusals_of_period_retention(client: TestClient, engine: Engine) -> None:
    hourly(client, engine)
    future = (datetime.now(UTC) + timedelta(days=2)).date().isoformat()
    assert "only periods that have ended" in problem(
        post(client, "merge", {"before": future, "into": "day"}), 422, "invalid-query"
    )
    daily = client.post("/v1/collections", json=spec_payload(name="daily"), headers=ADMIN)
    assert daily.status_code == 201
    finer = client.post(
        "/v1/collections/daily/periods/merge",
        json={"before": DAY.date().isoformat(), "into": "day"},
        headers=ADMIN,
    )
    assert "coarser period (week, all)" in problem(finer, 422, "invalid-query")
    assert post(client, "merge", {"before": "soon", "into": "day"}).status_code == 422
    assert post(client, "merge", {"before": DAY.isoformat(), "into": "month"}).status_code == 422
    analyst = client.post(
        "/v1/collections/survey/periods/merge",
        json={"before": DAY.isoformat(), "into": "day"},
        headers=ANALYST,
    )
    assert analyst.status_code == 403
