"""Fixtures of the aggregator tests: an app on a fresh database (a SQLite file, or a
PostgreSQL schema under ``LDPCOLLECT_TEST_ENGINE=postgresql``: ``tests/engines.py``),
tokens, report makers."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select
from tests.engines import database_url

from ldp_aggregator import training_place_wait
from ldp_aggregator.app import create_app
from ldp_aggregator.collections import create_collection
from ldp_aggregator.deps import AppState
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import StoredCollection, load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.storage.reports import count_reports
from ldp_aggregator.storage.stats import read_stats, statistics_of
from ldp_aggregator.storage.tables import reports
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_shared.wire.reports import encode_bits, new_report_id

with warnings.catch_warnings():
    # starlette suggests httpx2 for its TestClient; httpx is what this project ships
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

ADMIN_TOKEN = "admin-token-for-tests-0123456789"
ANALYST_TOKEN = "analyst-token-for-tests-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ANALYST = {"Authorization": f"Bearer {ANALYST_TOKEN}"}

COLORS = ["red", "green", "blue", "yellow"]
AGES = ["<30", "30-60", ">60"]
ITEMS = ["bread", "milk", "eggs", "beer", "tea"]


def spec_payload(name: str = "survey", min_reports: int = 20, **changes: Any) -> dict[str, Any]:
    """A JSON collection spec with an OUE, a GRR and a MASK attribute."""
    payload: dict[str, Any] = {
        "name": name,
        "epsilon": 2.0,
        "attributes": [
            {"name": "color", "domain": COLORS, "mechanism": "oue"},
            {"name": "age", "domain": AGES, "mechanism": "grr"},
            {"name": "basket", "domain": ITEMS, "mechanism": "mask", "keep_probability": 0.8},
        ],
        "release": {"min_reports": min_reports},
    }
    payload.update(changes)
    return payload


def make_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    gen = np.random.default_rng(seed)
    colors = gen.choice(len(COLORS), size=n, p=[0.5, 0.3, 0.15, 0.05])
    ages = gen.choice(len(AGES), size=n, p=[0.2, 0.5, 0.3])
    return [
        {
            "color": COLORS[int(c)],
            "age": AGES[int(a)],
            "basket": [item for item in ITEMS if gen.random() < 0.4],
        }
        for c, a in zip(colors, ages, strict=True)
    ]


def packed_reports(config: CollectionConfig, n: int, seed: int = 0) -> np.ndarray[Any, Any]:
    """``n`` packed perturbed reports (``n × report_bytes``), reproducible."""
    return Privatizer(config).privatize_many(make_records(n, seed), rng=seeded_rng(seed))


def report_dicts(
    config: CollectionConfig, packed: Sequence[Any] | np.ndarray[Any, Any]
) -> list[dict[str, str]]:
    """Wire reports (fresh ids) for packed rows."""
    return [
        {
            "id": new_report_id(),
            "config_hash": config.config_hash,
            "bits": encode_bits(bytes(np.asarray(row, dtype=np.uint8).tobytes())),
        }
        for row in packed
    ]


def problem(response: Any, status: int, slug: str) -> str:
    """The detail of a problem document with ``status`` and type ``slug``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["type"] == f"https://ldpcollect.dev/problems/{slug}"
    return str(body["detail"])


@dataclass(frozen=True)
class Snapshot:
    """What a collection holds: n_reports, stored rows and the sums."""

    n_reports: int
    rows: int
    sums: tuple[int, ...]


def snapshot(engine: Engine, name: str) -> Snapshot:
    collection = load_collection(engine, name)
    with engine.connect() as connection:
        stats = read_stats(
            connection,
            collection.id,
            collection.config.stats_length,
            collection.config.float_stats_length,
        )
        rows = count_reports(connection, collection.id)
    return Snapshot(stats.n_reports, rows, tuple(int(v) for v in stats.sums))


def assert_stored_and_recounted(engine: Engine, name: str, acknowledged: set[str]) -> set[str]:
    """Every acknowledged id is stored once and the statistics equal a recount of the
    stored rows; returns the stored ids."""
    collection = load_collection(engine, name)
    config = collection.config
    with engine.connect() as connection:
        rows = connection.execute(
            select(reports.c.report_id, reports.c.bits).where(
                reports.c.collection_id == collection.id
            )
        ).all()
        stats = read_stats(
            connection, collection.id, config.stats_length, config.float_stats_length
        )
    stored = {row.report_id for row in rows}
    assert acknowledged <= stored and len(stored) == len(rows)
    matrix = np.frombuffer(b"".join(bytes(row.bits) for row in rows), dtype=np.uint8)
    recount = statistics_of(config, matrix.reshape(len(rows), config.report_bytes))
    assert stats.n_reports == recount.n_reports == len(rows)
    assert np.array_equal(stats.sums, recount.sums)
    return stored


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        database_url=database_url(tmp_path / "ldp.db"),
        admin_token=ADMIN_TOKEN,
        analyst_token=ANALYST_TOKEN,
        max_body_bytes=1_000_000,
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


def _migrated(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def store(db_path: Path) -> Iterator[Engine]:
    """A migrated database of its own, without an app (SQLite: the file ``db_path``)."""
    yield from _migrated(database_url(db_path))


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[Engine]:
    """The migrated SQLite file ``db_path``, whatever engine the other tests run on."""
    yield from _migrated(f"sqlite:///{db_path}")


@pytest.fixture
def store_survey(store: Engine) -> StoredCollection:
    """The collection ``survey`` in :func:`store`."""
    return create_collection(store, CollectionSpec.model_validate(spec_payload()))


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


def state_of(client: TestClient) -> AppState:
    state = client.app.state.ldp  # type: ignore[attr-defined]
    assert isinstance(state, AppState)
    return state


@pytest.fixture
def engine(client: TestClient) -> Engine:
    return state_of(client).engine


@pytest.fixture
def config(client: TestClient) -> CollectionConfig:
    """The config of the collection ``survey``, created through the API."""
    response = client.post("/v1/collections", json=spec_payload(), headers=ADMIN)
    assert response.status_code == 201, response.text
    return CollectionConfig.model_validate(response.json())


@pytest.fixture
def train(client: TestClient) -> TestClient:
    """The app with a collection ``train`` (any collection can hold training jobs)."""
    response = client.post("/v1/collections", json=spec_payload(name="train"), headers=ADMIN)
    assert response.status_code == 201, response.text
    return client


@pytest.fixture
def short_place_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request for a place at a full round waits 0.2 s, not 5 s, before its 429."""
    monkeypatch.setattr(training_place_wait, "PLACE_WAIT_SECONDS", 0.2)
