"""Statements run on the driver's cursor (``storage/driver.py``) and the kept connection
(``storage/engine.KeptConnection``): the same rows, transaction and errors as SQLAlchemy's
own execution, without its per-statement machinery."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import (
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    func,
    select,
    text,
)
from sqlalchemy import insert as sql_insert
from sqlalchemy import update as sql_update
from sqlalchemy.exc import DBAPIError, IntegrityError, MultipleResultsFound, OperationalError
from tests.engines import POSTGRES_URL, drop_schema, new_postgres_schema

from ldp_aggregator.storage.driver import DriverStatement, compile_for
from ldp_aggregator.storage.engine import KeptConnection, make_engine

metadata = MetaData()
things = Table(
    "driver_things",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(20), nullable=False),
    Column("n", Integer, nullable=False),
)


def _engine(url: str) -> Iterator[Engine]:
    engine = make_engine(url)
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sql_insert(things), [{"id": i, "name": f"t{i}", "n": i} for i in (1, 2)])
    yield engine
    engine.dispose()


def _postgres() -> Iterator[Engine]:
    if not POSTGRES_URL:
        pytest.skip("no PostgreSQL server answers (CI=true makes this an error)")
    url = new_postgres_schema()
    yield from _engine(url)
    drop_schema(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        yield from _engine(f"sqlite:///{tmp_path / 'driver.db'}")
    else:
        yield from _postgres()


@pytest.fixture
def postgres_engine() -> Iterator[Engine]:
    yield from _postgres()


def _statements(engine: Engine) -> dict[str, DriverStatement]:
    t = things.c
    return {
        "by-id": compile_for(select(t.name, t.n).where(t.id == bindparam("id")), engine.dialect),
        "all": compile_for(select(t.id, t.name).order_by(t.id), engine.dialect),
        "bump": compile_for(
            sql_update(things).where(t.n >= bindparam("least")).values(n=t.n + 10),
            engine.dialect,
        ),
        "insert": compile_for(
            sql_insert(things).values(id=bindparam("id"), name=bindparam("name"), n=0),
            engine.dialect,
        ),
    }


def test_rows_are_named_and_counted_as_sqlalchemy_gives_them(engine: Engine) -> None:
    run = _statements(engine)
    with engine.begin() as connection:
        row = run["by-id"].run(connection, {"id": 2}).one_or_none()
        assert row is not None and (row.name, row.n) == ("t2", 2) and tuple(row) == ("t2", 2)
        assert run["by-id"].run(connection, {"id": 9}).one_or_none() is None
        assert run["by-id"].run(connection, {"id": 9}).first() is None
        everything = run["all"].run(connection, {})
        assert [tuple(r) for r in everything] == [(1, "t1"), (2, "t2")]
        assert everything.first().id == 1 and len(everything.all()) == 2
        with pytest.raises(MultipleResultsFound):
            everything.one_or_none()
        assert run["bump"].run(connection, {"least": 2}).rowcount == 1
        assert run["bump"].run(connection, {"least": 100}).rowcount == 0
        expected = connection.execute(select(things.c.n).order_by(things.c.id)).scalars().all()
    assert expected == [1, 12]


def test_a_statement_runs_in_the_callers_transaction(engine: Engine) -> None:
    run = _statements(engine)
    with engine.connect() as connection:
        assert not connection.in_transaction()
        run["insert"].run(connection, {"id": 3, "name": "t3"})
        assert connection.in_transaction()  # begun, as SQLAlchemy's autobegin would
        connection.rollback()
    with engine.begin() as connection:
        assert run["by-id"].run(connection, {"id": 3}).first() is None  # rolled back
        run["insert"].run(connection, {"id": 3, "name": "t3"})
    with engine.connect() as connection:
        assert run["by-id"].run(connection, {"id": 3}).first() is not None  # committed


def test_a_driver_error_is_sqlalchemys_wrapped_error_without_its_parameters(engine: Engine) -> None:
    """The engine hides statements' parameters (report ids and bits must reach no log):
    an error raised on the driver's cursor is wrapped as SQLAlchemy wraps its own."""
    run = _statements(engine)
    with pytest.raises(IntegrityError) as raised, engine.begin() as connection:
        run["insert"].run(connection, {"id": 1, "name": "secret-value"})
    assert "secret-value" not in str(raised.value)
    assert "hidden due to hide_parameters" in str(raised.value)
    insert = run["insert"]
    rows = [insert.params({"id": i, "name": f"new{i}"}) for i in (5, 6)]
    with engine.begin() as connection:
        assert insert.run_many(connection, rows) == 2  # the rows changed, summed
    with pytest.raises(IntegrityError) as raised, engine.begin() as connection:
        insert.run_many(connection, [insert.params({"id": 7, "name": "secret-value"}), rows[0]])
    assert "secret-value" not in str(raised.value)
    with engine.connect() as connection:  # the failed executemany left nothing
        assert run["by-id"].run(connection, {"id": 7}).first() is None


def test_an_error_while_the_rows_are_fetched_is_wrapped_too(tmp_path: Path) -> None:
    """SQLite computes the rows after the first as they are fetched: an error there (an
    integer overflow on the second row here; an I/O error in life) is SQLAlchemy's
    wrapped error as one of the execution is, so the API answers it as a database error."""
    engine = next(_engine(f"sqlite:///{tmp_path / 'fetch.db'}"))
    with engine.begin() as connection:
        connection.execute(sql_update(things).where(things.c.id == 2).values(n=-(2**63)))
    overflowing = compile_for(
        select(func.abs(things.c.n).label("a")).order_by(things.c.id), engine.dialect
    )
    with pytest.raises(OperationalError), engine.connect() as connection:
        overflowing.run(connection, {})
    engine.dispose()


def test_a_lost_server_connection_is_invalidated_by_the_statement_that_finds_out(
    postgres_engine: Engine,
) -> None:
    engine = postgres_engine
    run = _statements(engine)
    kept = KeptConnection(engine)
    with kept.transaction() as connection:
        pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    with engine.connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    with pytest.raises(DBAPIError) as raised, kept.transaction() as connection:
        run["by-id"].run(connection, {"id": 1})
    assert raised.value.connection_invalidated
    with kept.transaction() as connection:  # a new connection
        assert run["by-id"].run(connection, {"id": 1}).first() is not None
    kept.close()


def test_a_kept_connection_lasts_across_transactions_until_the_engine_is_disposed(
    engine: Engine,
) -> None:
    kept = KeptConnection(engine)
    assert kept.kept
    seen = []
    for _ in range(3):
        with kept.transaction() as connection:
            seen.append(connection.connection.dbapi_connection)
    assert seen[0] is seen[1] is seen[2]
    engine.dispose()  # e.g. to reconnect every connection with new settings
    with kept.transaction() as connection:
        assert connection.connection.dbapi_connection is not seen[0]
    kept.close()


def test_an_in_memory_database_is_used_through_the_pool() -> None:
    """One connection shared by every thread: no thread may keep it."""
    engine = make_engine("sqlite://")
    assert not KeptConnection(engine).kept
    engine.dispose()
