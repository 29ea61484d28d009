"""Migration 0012: ``reports`` loses its foreign key to ``collections`` with every stored
report kept (SQLite rebuilds the table, still without rowid), and gets it back on
downgrade. Runs on the test engine (SQLite, or PostgreSQL under
``LDPCOLLECT_TEST_ENGINE=postgresql``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text
from tests.aggregator.conftest import spec_payload
from tests.engines import database_url

from ldp_aggregator.collections import create_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.lifecycle import delete_collection
from ldp_aggregator.storage.migrate import head_revision, upgrade
from ldp_aggregator.storage.reports import count_reports, insert_reports
from ldp_shared.schema import CollectionSpec

from .test_migration_0009 import downgrade

ROWS = [(f"report-{k:04d}", bytes([k % 256, 1])) for k in range(50)]


@pytest.fixture
def at_0011(db_path: Path) -> Iterator[Engine]:
    engine = make_engine(database_url(db_path))
    upgrade(engine, "0011")
    yield engine
    engine.dispose()


def foreign_keys(engine: Engine) -> list[object]:
    return list(inspect(engine).get_foreign_keys("reports"))


def without_rowid(engine: Engine) -> bool:
    with engine.connect() as connection:
        sql = connection.execute(
            text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'reports'")
        ).scalar_one()
    return "WITHOUT ROWID" in str(sql).upper()


def test_the_foreign_key_goes_and_every_report_stays(at_0011: Engine) -> None:
    kept = create_collection(at_0011, CollectionSpec.model_validate(spec_payload("kept")))
    with at_0011.begin() as connection:
        insert_reports(connection, kept.id, ROWS, date(2026, 11, 23), 0)
    assert len(foreign_keys(at_0011)) == 1
    upgrade(at_0011)
    assert foreign_keys(at_0011) == []
    with at_0011.connect() as connection:
        assert count_reports(connection, kept.id) == len(ROWS)
        stored = connection.execute(text("SELECT report_id, bits FROM reports")).all()
    assert sorted((r, bytes(b)) for r, b in stored) == ROWS
    if at_0011.dialect.name == "sqlite":
        assert without_rowid(at_0011)

    # what the cascade did, delete_collection does now
    gone = create_collection(at_0011, CollectionSpec.model_validate(spec_payload("gone")))
    with at_0011.begin() as connection:
        insert_reports(connection, gone.id, ROWS[:7], date(2026, 11, 23), 0)
    delete_collection(at_0011, gone)
    with at_0011.connect() as connection:
        assert count_reports(connection, gone.id) == 0
        assert count_reports(connection, kept.id) == len(ROWS)

    # and back: orphans (a report whose collection is gone, possible without the key)
    # dropped first, then the key again
    with at_0011.begin() as connection:
        insert_reports(connection, gone.id, ROWS[:2], date(2026, 11, 23), 0)
    downgrade(at_0011, "0011")
    with at_0011.connect() as connection:
        assert count_reports(connection, gone.id) == 0
        assert count_reports(connection, kept.id) == len(ROWS)
    assert len(foreign_keys(at_0011)) == 1
    if at_0011.dialect.name == "sqlite":
        assert without_rowid(at_0011)
    upgrade(at_0011)
    assert foreign_keys(at_0011) == [] and head_revision() is not None
