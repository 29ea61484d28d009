"""A collection's lifecycle over the API: close (uploads refused with 409, estimates still
read), reopen, and delete with a confirmation, taking everything of the collection with it
and nothing of another one (SQLite and PostgreSQL: ``LDPCOLLECT_TEST_ENGINE``)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, Table, func, select
from tests.aggregator.training_helpers import answer, ask, jobs_path, records, spec

from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.jobs import jobs
from ldp_aggregator.storage.models import insert_model
from ldp_aggregator.storage.tables import collection_stats, collections, models, reports
from ldp_aggregator.storage.training import training_reports, training_rounds, training_tokens
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import CollectionClosedError
from ldp_shared.rand import seeded_rng

from .conftest import ADMIN, ANALYST, packed_reports, problem, report_dicts, spec_payload, state_of

ALL_TABLES: tuple[Table, ...] = (
    collections,
    collection_stats,
    reports,
    models,
    jobs,
    training_rounds,
    training_tokens,
    training_reports,
)


def upload(client: TestClient, config: CollectionConfig, n: int, seed: int = 0) -> Any:
    body = {"reports": report_dicts(config, packed_reports(config, n, seed))}
    return client.post(f"/v1/collections/{config.name}/reports", json=body)


def create(client: TestClient, name: str) -> CollectionConfig:
    response = client.post("/v1/collections", json=spec_payload(name=name), headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


def status_of(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get(f"/v1/collections/{name}/status", headers=ANALYST)
    assert response.status_code == 200, response.text
    return dict(response.json())


def counts(engine: Engine) -> dict[str, int]:
    """Rows per table."""
    with engine.connect() as connection:
        return {
            table.name: int(
                connection.execute(select(func.count()).select_from(table)).scalar_one()
            )
            for table in ALL_TABLES
        }


def test_a_closed_collection_refuses_uploads_and_still_answers(
    client: TestClient, config: CollectionConfig
) -> None:
    assert upload(client, config, 30).json()["accepted"] == 30
    assert status_of(client, "survey") == {
        "name": "survey",
        "open": True,
        "closed_day": None,
        "n_reports": 30,
        "retention_days": None,
    }
    closed = client.post("/v1/collections/survey/close", headers=ADMIN)
    assert closed.status_code == 200, closed.text
    today = closed.json()["closed_day"]
    assert date.fromisoformat(today) and closed.json()["open"] is False
    # idempotent: the first day stays
    assert client.post("/v1/collections/survey/close", headers=ADMIN).json() == closed.json()

    detail = problem(upload(client, config, 5, seed=1), 409, CollectionClosedError.type_slug)
    assert "closed" in detail and "nothing of this request was stored" in detail
    # a batch with nothing valid in it is refused the same way
    bad = {"reports": [{"id": "x", "config_hash": "y", "bits": "AA=="}]}
    refused = client.post("/v1/collections/survey/reports", json=bad)
    problem(refused, 409, CollectionClosedError.type_slug)
    assert status_of(client, "survey")["n_reports"] == 30

    estimate = client.get(
        "/v1/collections/survey/frequencies", params={"attribute": "color"}, headers=ANALYST
    )
    assert estimate.status_code == 200 and estimate.json()["n_reports"] == 30
    assert client.get("/v1/collections/survey").status_code == 200  # the config, too

    reopened = client.post("/v1/collections/survey/reopen", headers=ADMIN)
    assert reopened.json()["open"] is True and reopened.json()["closed_day"] is None
    assert upload(client, config, 5, seed=2).json()["accepted"] == 5


def test_only_an_admin_closes_reopens_or_deletes(
    client: TestClient, config: CollectionConfig
) -> None:
    for method, path in (
        ("POST", "/v1/collections/survey/close"),
        ("POST", "/v1/collections/survey/reopen"),
        ("DELETE", "/v1/collections/survey?confirm=survey"),
    ):
        problem(client.request(method, path), 401, "unauthenticated")
        problem(client.request(method, path, headers=ANALYST), 403, "forbidden")
    problem(client.get("/v1/collections/survey/status"), 401, "unauthenticated")
    assert status_of(client, "survey")["open"] is True
    for missing in ("close", "reopen", "status"):
        response = client.request(
            "GET" if missing == "status" else "POST",
            f"/v1/collections/nothing/{missing}",
            headers=ADMIN,
        )
        problem(response, 404, "collection-not-found")


def test_delete_needs_the_name_confirmed(
    client: TestClient, config: CollectionConfig, engine: Engine
) -> None:
    assert upload(client, config, 25).json()["accepted"] == 25
    before = counts(engine)
    missing = client.delete("/v1/collections/survey", headers=ADMIN)
    assert missing.status_code == 422, missing.text
    wrong = client.delete("/v1/collections/survey", params={"confirm": "Survey"}, headers=ADMIN)
    assert "confirm" in problem(wrong, 422, "invalid-query")
    assert counts(engine) == before
    gone = client.delete("/v1/collections/nothing?confirm=nothing", headers=ADMIN)
    problem(gone, 404, "collection-not-found")


def fill(client: TestClient, engine: Engine, name: str) -> None:
    """Reports, a model, an itemset job and a training job with rounds, tokens and reports."""
    config = create(client, name)
    assert upload(client, config, 40).json()["accepted"] == 40
    job = client.post(jobs_path(name), json=spec(), headers=ANALYST)
    assert job.status_code == 201, job.text
    rng = seeded_rng(3)
    for record in records(3):
        participation = ask(client, job.json()["id"], name)
        assert answer(client, participation, record, rng).status_code == 200
    mining = client.post(
        f"/v1/collections/{name}/itemsets",
        json={"min_support": 0.1, "wait_seconds": 0},
        headers=ANALYST,
    )
    assert mining.status_code in (200, 202), mining.text
    stored = load_collection(engine, name)
    with engine.begin() as connection:
        insert_model(
            connection,
            model_id=f"m-{name}",
            collection_id=stored.id,
            kind="naive-bayes",
            created_day=date(2026, 1, 1),
            model_json="{}",
        )


def test_delete_takes_everything_of_the_collection_and_nothing_else(
    client: TestClient, engine: Engine
) -> None:
    fill(client, engine, "keep")
    alone = counts(engine)
    fill(client, engine, "train")
    full = counts(engine)
    assert all(full[table] > alone[table] for table in ("reports", "models", "jobs"))
    assert full["training_reports"] > alone["training_reports"]

    deleted = client.delete("/v1/collections/train", params={"confirm": "train"}, headers=ADMIN)
    assert deleted.status_code == 204 and deleted.content == b""
    assert counts(engine) == alone
    assert client.get("/v1/collections", headers=ADMIN).json()["collections"] == ["keep"]
    for path in ("", "/status", "/frequencies?attribute=color"):
        missing = client.get(f"/v1/collections/train{path}", headers=ADMIN)
        problem(missing, 404, "collection-not-found")
    keep = CollectionConfig.model_validate(client.get("/v1/collections/keep").json())
    body = {"reports": report_dicts(keep, packed_reports(keep, 3))}
    gone = client.post("/v1/collections/train/reports", json=body)
    problem(gone, 404, "collection-not-found")

    # the name is free again, with another config if one likes
    again = client.post(
        "/v1/collections", json=spec_payload(name="train", epsilon=1.0), headers=ADMIN
    )
    assert again.status_code == 201 and status_of(client, "train")["n_reports"] == 0


def test_a_replica_never_serves_a_collection_deleted_through_another(
    client: TestClient, config: CollectionConfig, settings: Any
) -> None:
    from ldp_aggregator.app import create_app

    with TestClient(create_app(settings), raise_server_exceptions=False) as other:
        assert upload(other, config, 20).json()["accepted"] == 20  # cached there now
        assert other.get("/v1/collections/survey").status_code == 200
        deleted = client.delete("/v1/collections/survey?confirm=survey", headers=ADMIN)
        assert deleted.status_code == 204
        problem(other.get("/v1/collections/survey"), 404, "collection-not-found")
        problem(upload(other, config, 5, seed=1), 404, "collection-not-found")

        # recreated with another config under the same name: the other replica follows
        spec = spec_payload(epsilon=1.0)
        assert client.post("/v1/collections", json=spec, headers=ADMIN).status_code == 201
        fresh = CollectionConfig.model_validate(other.get("/v1/collections/survey").json())
        assert fresh.config_hash != config.config_hash
        stale = upload(other, config, 5, seed=2).json()
        assert stale["rejected"] == 5 and stale["accepted"] == 0
        assert upload(other, fresh, 5, seed=3).json()["accepted"] == 5
        assert status_of(client, "survey")["n_reports"] == 5


def test_a_replica_refuses_uploads_to_a_collection_closed_through_another(
    client: TestClient, config: CollectionConfig, settings: Any
) -> None:
    from ldp_aggregator.app import create_app

    with TestClient(create_app(settings), raise_server_exceptions=False) as other:
        assert upload(other, config, 20).json()["accepted"] == 20
        assert client.post("/v1/collections/survey/close", headers=ADMIN).status_code == 200
        problem(upload(other, config, 5, seed=1), 409, CollectionClosedError.type_slug)
    assert state_of(client).collections.get("survey").config == config


@pytest.mark.parametrize("closed", [True, False])
def test_status_counts_what_is_stored(
    client: TestClient, config: CollectionConfig, closed: bool
) -> None:
    assert upload(client, config, 21).json()["accepted"] == 21
    if closed:
        client.post("/v1/collections/survey/close", headers=ADMIN)
    body = status_of(client, "survey")
    assert body["n_reports"] == 21 and body["open"] is not closed
