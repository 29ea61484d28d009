"""Schema, engine pragmas, migrations and the statistics blob."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, select, text

from ldp_aggregator.frequencies import estimate_frequencies
from ldp_aggregator.release import current_stats
from ldp_aggregator.storage.collections import load_collection
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import current_revision, head_revision, upgrade
from ldp_aggregator.storage.tables import collection_stats, metadata, reports
from ldp_shared.errors import InsufficientReportsError
from ldp_shared.periods import parse_window, period_label, stamp


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    yield engine
    engine.dispose()


def test_migrations_create_the_schema_on_a_fresh_database(fresh: Engine) -> None:
    assert current_revision(fresh) is None
    upgrade(fresh)
    assert current_revision(fresh) == head_revision() is not None
    tables = set(inspect(fresh).get_table_names())
    assert {"collections", "collection_stats", "reports", "alembic_version"} <= tables
    with fresh.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), metadata)
    assert diff == [], f"the migrations and tables.py disagree: {diff}"


def test_upgrade_is_idempotent(fresh: Engine) -> None:
    upgrade(fresh)
    upgrade(fresh)
    assert current_revision(fresh) == head_revision()


def test_reports_table_holds_nothing_that_could_identify_a_sender(fresh: Engine) -> None:
    upgrade(fresh)
    columns = {c["name"]: c for c in inspect(fresh).get_columns("reports")}
    assert set(columns) == {"collection_id", "report_id", "received_day", "period_start", "bits"}
    assert type(columns["received_day"]["type"]).__name__ == "DATE"
    assert type(columns["period_start"]["type"]).__name__ == "BIGINT"  # a period's start
    forbidden = ("ip", "addr", "agent", "host", "time", "seq", "order")
    assert not [name for name in columns for word in forbidden if word in name]
    # no rowid: rows are kept in the order of their random ids, not of arrival
    with fresh.connect() as connection:
        sql = connection.execute(
            text("SELECT sql FROM sqlite_master WHERE name = 'reports'")
        ).scalar_one()
    assert "WITHOUT ROWID" in sql.upper()
    primary = inspect(fresh).get_pk_constraint("reports")["constrained_columns"]
    assert primary == ["collection_id", "report_id"]


def test_sqlite_pragmas(fresh: Engine) -> None:
    expected = {
        "journal_mode": "wal",
        "synchronous": 2,  # FULL: an acknowledged report survives a power cut
        "busy_timeout": 30000,
        "foreign_keys": 1,
        "cache_size": -16384,
        "wal_autocheckpoint": 10000,
        "secure_delete": 1,  # freed bytes are zeroed (docs/privacy-at-rest.md)
        "journal_size_limit": 0,
    }
    with fresh.connect() as connection:
        pragma = {
            name: connection.execute(text(f"PRAGMA {name}")).scalar_one() for name in expected
        }
    assert pragma == expected


def test_in_memory_sqlite_shares_one_connection() -> None:
    engine = make_engine("sqlite://")
    upgrade(engine)
    assert "reports" in inspect(engine).get_table_names()
    engine.dispose()


DATA = Path(__file__).parent / "data"


def test_a_database_of_revision_0003_upgrades_and_answers_as_before(tmp_path: Path) -> None:
    """A database written before the mechanism registry (schema revision 0003, commit
    ddd5ef1: a split collection of SUE, GRR, OUE and MASK, and a label collection under
    the sample budget, 300 reports each) upgrades in place, and every frequency estimate
    is the one that code released from it, to the last bit (standard errors to 1e-12:
    the label's variance is now summed in another order). The intervals are the score
    intervals released since, which that code did not have: they must contain the
    estimates that lie in [0, 1]."""
    path = tmp_path / "old.sqlite3"
    shutil.copy(DATA / "revision-0003.sqlite3", path)
    expected = json.loads((DATA / "revision-0003-frequencies.json").read_text())
    engine = make_engine(f"sqlite:///{path}")
    assert current_revision(engine) == "0003"
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    for name, attributes in expected.items():
        collection = load_collection(engine, name)
        for attribute, released in attributes.items():
            answer = estimate_frequencies(engine, collection, attribute, 0.9)
            now = json.loads(answer.model_dump_json())
            assert now.pop("interval") == "score"
            low, high = np.array(now.pop("ci_low")), np.array(now.pop("ci_high"))
            np.testing.assert_allclose(now.pop("stderr"), released.pop("stderr"), rtol=1e-12)
            del released["ci_low"], released["ci_high"]
            assert now == released, (name, attribute)
            estimate = np.array(now["estimate"])
            feasible = (estimate >= 0.0) & (estimate <= 1.0)
            assert np.all((low <= estimate) & (estimate <= high) | ~feasible), (name, attribute)
    engine.dispose()


def test_an_upgraded_database_holds_every_report_in_one_period(tmp_path: Path) -> None:
    """Statistics gathered before periods cannot be split by time: every row and report
    of the old database lands in the period of the upgrade's day (docs/periods.md), so a
    window holding that day holds them all and one before it holds none."""
    path = tmp_path / "old.sqlite3"
    shutil.copy(DATA / "revision-0003.sqlite3", path)
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    today = stamp("day")[1]
    with engine.connect() as connection:
        stats_periods = set(connection.execute(select(collection_stats.c.period_start)).scalars())
        report_periods = set(connection.execute(select(reports.c.period_start)).scalars())
    assert stats_periods == report_periods == {today}
    for name in ("labelled", "mixed"):
        collection = load_collection(engine, name)
        config = collection.config
        everything = current_stats(engine, collection)
        window = parse_window(period_label(today, "day"), None, "day")
        assert current_stats(engine, collection, window).n_reports == everything.n_reports == 300
        with pytest.raises(InsufficientReportsError, match="has 0 reports in"):
            current_stats(engine, collection, parse_window("2020-01-01", "2020-01-02", "day"))
        assert config.spec.period == "day"
    engine.dispose()


def test_a_database_error_never_shows_report_ids_or_bits(fresh: Engine) -> None:
    """An error's message (what a log would print) leaves the parameters out."""
    upgrade(fresh)
    secret_id, secret_bits = "never-in-a-log-0123", b"\x07\x08"
    statement = text("INSERT INTO reports VALUES (:cid, :rid, :day, :period, :bits)")
    values = {"cid": 1, "rid": secret_id, "day": "2026-11-23", "period": 0, "bits": secret_bits}
    with pytest.raises(Exception) as raised, fresh.begin() as connection:
        connection.execute(statement, values)
        connection.execute(statement, values)  # the same key again
    assert secret_id not in str(raised.value) and "hidden" in str(raised.value)
