"""Retention: reports past a collection's retention lose their bits, keep their ids (a
replay still counts once) and leave the statistics, so every estimate, unchanged."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.reshuffler import Reshuffler
from ldp_aggregator.storage.collections import load_collection, utc_today
from ldp_aggregator.storage.reports import iter_report_bits
from ldp_aggregator.storage.retention import fold_expired
from ldp_aggregator.storage.tables import collections, reports
from ldp_aggregator.writer import ReportWriter
from ldp_shared.collection import CollectionConfig
from ldp_shared.wire.reports import ReportBatch

from .conftest import ADMIN, ANALYST, packed_reports, problem, report_dicts

OLD_DAYS = 40


def store_old_and_new(client: TestClient, config: CollectionConfig) -> list[dict[str, str]]:
    """30 reports received OLD_DAYS ago (returned) and 20 received today."""
    engine = client.app.state.ldp.engine  # type: ignore[attr-defined]
    old = report_dicts(config, packed_reports(config, 30, seed=1))
    day = utc_today() - timedelta(days=OLD_DAYS)
    batch = ReportBatch.model_validate({"reports": old})
    assert (
        ingest_batch(
            engine,
            load_collection(engine, "survey"),
            batch,
            at=datetime.combine(day, time(12), UTC),
        ).accepted
        == 30
    )
    new = {"reports": report_dicts(config, packed_reports(config, 20, seed=2))}
    assert client.post("/v1/collections/survey/reports", json=new).json()["accepted"] == 20
    return old


def rows(engine: Engine) -> tuple[int, int]:
    """(rows, rows whose bits are folded away)."""
    with engine.connect() as connection:
        total = connection.execute(select(func.count()).select_from(reports)).scalar_one()
        folded = connection.execute(
            select(func.count()).select_from(reports).where(reports.c.bits == b"")
        ).scalar_one()
    return int(total), int(folded)


def estimates(client: TestClient) -> Any:
    return [
        client.get(
            f"/v1/collections/survey/frequencies?attribute={attribute}", headers=ANALYST
        ).json()
        for attribute in ("color", "age", "basket")
    ]


def retain(client: TestClient, days: int | None) -> Any:
    return client.put("/v1/collections/survey/retention", json={"days": days}, headers=ADMIN)


def test_expired_reports_are_folded_and_their_ids_still_stop_replays(
    client: TestClient, config: CollectionConfig, engine: Engine
) -> None:
    old = store_old_and_new(client, config)
    before = estimates(client)
    assert rows(engine) == (50, 0)

    kept = retain(client, OLD_DAYS)  # received OLD_DAYS ago: kept through today
    assert kept.status_code == 200 and kept.json()["retention_days"] == OLD_DAYS
    assert rows(engine) == (50, 0)
    shorter = retain(client, OLD_DAYS - 1)
    assert shorter.json() == {
        "name": "survey",
        "open": True,
        "closed_day": None,
        "n_reports": 50,
        "retention_days": OLD_DAYS - 1,
    }
    assert rows(engine) == (50, 30)
    assert estimates(client) == before  # the statistics hold the folded reports

    replay = client.post("/v1/collections/survey/reports", json={"reports": old[:5]})
    assert replay.json()["duplicate"] == 5 and replay.json()["accepted"] == 0
    with engine.connect() as connection:
        stored = load_collection(engine, "survey").id
        assert sum(len(chunk) for chunk in iter_report_bits(connection, stored)) == 20


def test_reports_of_today_fold_later_and_none_keeps_everything(
    client: TestClient, config: CollectionConfig, engine: Engine
) -> None:
    store_old_and_new(client, config)
    assert retain(client, None).json()["retention_days"] is None
    assert fold_expired(engine, utc_today() + timedelta(days=10_000)) == 0
    assert retain(client, 7).status_code == 200
    assert rows(engine) == (50, 30)
    assert fold_expired(engine, utc_today() + timedelta(days=7)) == 0
    assert fold_expired(engine, utc_today() + timedelta(days=8)) == 20
    assert rows(engine) == (50, 50)
    assert client.get("/v1/collections/survey/status", headers=ANALYST).json()["n_reports"] == 50


def test_the_reshuffler_folds_on_its_turn(
    client: TestClient, config: CollectionConfig, engine: Engine
) -> None:
    store_old_and_new(client, config)
    with engine.begin() as connection:  # a retention set without folding at once
        connection.execute(collections.update().values(retention_days=1))
    assert rows(engine) == (50, 0)
    Reshuffler(ReportWriter(engine), 0).stop()  # one turn
    assert rows(engine) == (50, 30)


def test_retention_is_checked_and_admin_only(client: TestClient, config: CollectionConfig) -> None:
    for days in (0, -1, 36_501, 1.5):
        response = retain(client, days)  # type: ignore[arg-type]
        problem(response, 422, "invalid-request")
    problem(
        client.put("/v1/collections/survey/retention", json={"days": 3}, headers=ANALYST),
        403,
        "forbidden",
    )
    missing = client.put("/v1/collections/nothing/retention", json={"days": 3}, headers=ADMIN)
    problem(missing, 404, "collection-not-found")
