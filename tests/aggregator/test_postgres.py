"""The same code on PostgreSQL (psycopg 3): migrations, ingestion under concurrency, the API.

Runs against ``LDPCOLLECT_TEST_POSTGRES_URL`` (``postgresql+psycopg://user@host:port/db``),
by default the local server at ``127.0.0.1:5432``, database ``test``; each run works in a
schema of its own and drops it afterwards (``tests/engines.py``). Where no server answers,
the tests are skipped and say so, except under ``CI=true``, where that is an error: CI
must run them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import current_revision, head_revision, upgrade
from ldp_aggregator.storage.tables import metadata
from ldp_shared.collection import CollectionConfig
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import ReportBatch

from .conftest import (
    ADMIN,
    ADMIN_TOKEN,
    ANALYST,
    ANALYST_TOKEN,
    packed_reports,
    report_dicts,
    snapshot,
    spec_payload,
    state_of,
)

BASE_URL = POSTGRES_URL
pytestmark = pytest.mark.skipif(
    not BASE_URL,
    reason="no PostgreSQL server answers (set LDPCOLLECT_TEST_POSTGRES_URL to run these tests)",
)


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = new_postgres_schema()
    yield url
    drop_schema(url)


@pytest.fixture
def pg(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    upgrade(engine)
    yield engine
    engine.dispose()


def test_migrations_match_the_tables(pg_url: str) -> None:
    engine = make_engine(pg_url)
    assert current_revision(engine) is None
    upgrade(engine)
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    engine.dispose()


def test_concurrent_ingests_lose_no_update(pg: Engine) -> None:
    survey = create_collection(pg, CollectionSpec.model_validate(spec_payload()))
    batches = [report_dicts(survey.config, packed_reports(survey.config, 100, s)) for s in range(8)]
    errors: list[BaseException] = []

    def work(items: list[dict[str, str]]) -> None:
        try:
            for _ in range(2):
                ingest_batch(pg, survey, ReportBatch.model_validate({"reports": items}))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(items,)) for items in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    state = snapshot(pg, "survey")
    assert state.n_reports == state.rows == 800 and sum(state.sums) > 0


def test_the_api_on_postgres(pg_url: str) -> None:
    settings = Settings(database_url=pg_url, admin_token=ADMIN_TOKEN, analyst_token=ANALYST_TOKEN)
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").status_code == 200
        created = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
        assert created.status_code == 201
        assert client.post("/v1/collections", json=spec_payload(), headers=ADMIN).status_code == 409
        config = CollectionConfig.model_validate(created.json())
        items = report_dicts(config, packed_reports(config, 40))
        first = client.post("/v1/collections/survey/reports", json={"reports": items}).json()
        again = client.post("/v1/collections/survey/reports", json={"reports": items}).json()
        assert (first["accepted"], again["duplicate"]) == (40, 40)
        estimate = client.get(
            "/v1/collections/survey/frequencies", params={"attribute": "age"}, headers=ANALYST
        )
        assert estimate.status_code == 200 and estimate.json()["n_reports"] == 40
        state = snapshot(state_of(client).engine, "survey")
        assert state.n_reports == state.rows == 40


def test_every_session_plans_each_statement_for_its_values(pg: Engine) -> None:
    """A generic plan kept for a prepared statement once made ingestion ten times slower
    (see ``storage/engine.py``); the setting that prevents it survives the pool's resets."""
    for _ in range(3):
        with pg.connect() as connection:
            shown = connection.execute(text("SHOW plan_cache_mode")).scalar_one()
            assert shown == "force_custom_plan"
            connection.rollback()
    pg.dispose()
    with pg.begin() as connection:
        assert connection.execute(text("SHOW plan_cache_mode")).scalar_one() == "force_custom_plan"
