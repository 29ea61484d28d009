"""The schema check of ``storage/migrate.py``: with migrations left to ``ldpcollect
migrate`` (``LDPCOLLECT_MIGRATE_ON_STARTUP=false``), a database whose schema is older than
the code is served with a warning and keeps ``/readyz`` at 503 until migrated; one that a
newer ldpcollect migrated is one line from ``serve`` (and ``fold``), and a running server
stays ready on it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from tests.engines import database_url

from ldp_aggregator.app import create_app
from ldp_aggregator.cli import EXIT_ERROR, main
from ldp_aggregator.reshuffler import Reshuffler
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import check_schema, head_revision, schema_of, upgrade
from ldp_aggregator.writer import ReportWriter
from ldp_shared.errors import ConfigurationError

from .test_cli import _free_port
from .test_cli import _serving_nothing as _serving_none

NEWER = "f00dfeedbeef"
"""A revision no build of this code ships: what a newer ldpcollect would have written."""


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = make_engine(database_url(tmp_path / "schema.db"))
    yield made
    made.dispose()


def _set_revision(engine: Engine, revision: str) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def test_an_empty_database_is_behind_until_migrated(engine: Engine) -> None:
    empty = schema_of(engine)
    assert empty.current is None and empty.behind
    problem = empty.problem("this server")
    assert problem is not None and "ldpcollect migrate" in problem and str(empty.head) in problem
    with pytest.raises(ConfigurationError, match=r"none \(nothing migrated yet\)"):
        check_schema(engine, "this server")
    upgrade(engine)
    current = schema_of(engine)
    assert current.current == head_revision() and not current.behind
    assert current.problem("this server") is None
    check_schema(engine, "this server")  # no error


def test_an_older_revision_is_behind_and_named(engine: Engine) -> None:
    upgrade(engine, "0012")
    older = schema_of(engine)
    assert older.known and older.behind and older.current == "0012"
    assert "revision 0012, this server needs" in (older.problem("this server") or "")


def test_a_revision_from_a_newer_build_is_not_behind(engine: Engine) -> None:
    upgrade(engine)
    _set_revision(engine, NEWER)
    newer = schema_of(engine)
    assert not newer.known and not newer.behind
    problem = newer.problem("this fold worker") or ""
    assert f"revision {NEWER}, which this fold worker does not know" in problem
    assert "newer ldpcollect" in problem
    with pytest.raises(ConfigurationError):
        check_schema(engine, "this fold worker")


def test_readyz_waits_for_the_migration(tmp_path: Path) -> None:
    url = database_url(tmp_path / "late.db")
    with TestClient(create_app(Settings(database_url=url, migrate_on_startup=False))) as app:
        waiting = app.get("/readyz")
        assert waiting.status_code == 503
        assert waiting.headers["content-type"] == "application/problem+json"
        assert "ldpcollect migrate" in waiting.json()["detail"]
        engine = make_engine(url)
        try:
            upgrade(engine)  # the migration job, run beside the server
            assert app.get("/readyz").status_code == 200
            # a newer build migrating further does not take a running replica out
            _set_revision(engine, NEWER)
            assert app.get("/readyz").status_code == 200
        finally:
            engine.dispose()


def test_readyz_of_a_server_that_migrates_itself(tmp_path: Path) -> None:
    url = database_url(tmp_path / "own.db")
    with TestClient(create_app(Settings(database_url=url))) as app:
        assert app.get("/readyz").json() == {"status": "ready"}


def _serving_nothing(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """``serve`` with migrations left to ``ldpcollect migrate``, uvicorn never run."""
    monkeypatch.setenv("LDPCOLLECT_MIGRATE_ON_STARTUP", "false")
    return _serving_none(monkeypatch)


def test_serve_on_a_newer_build_s_schema_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = _serving_nothing(monkeypatch)
    url = f"sqlite:///{tmp_path / 'serve.db'}"
    engine = make_engine(url)
    upgrade(engine)
    _set_revision(engine, NEWER)
    engine.dispose()
    assert main(["serve", "--port", str(_free_port()), "--database-url", url]) == EXIT_ERROR
    assert not served
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ldpcollect: error:")]
    assert len(errors) == 1 and "Traceback" not in "".join(lines)
    assert "this server" in errors[0] and "newer ldpcollect" in errors[0]


def test_serve_on_an_unmigrated_schema_warns_and_serves_not_ready(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A replica may start before the migration job has run: it serves, its /readyz
    holding traffic back (above), and says why at start."""
    served = _serving_nothing(monkeypatch)
    url = f"sqlite:///{tmp_path / 'early.db'}"
    with caplog.at_level(logging.WARNING, logger="ldp_aggregator"):
        assert main(["serve", "--port", str(_free_port()), "--database-url", url]) == 0
    assert len(served) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("ldpcollect migrate" in w and "/readyz answers 503" in w for w in warnings)


def test_a_reshuffler_turn_on_an_unmigrated_schema_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'bare.db'}")
    writer = ReportWriter(engine)
    try:
        with caplog.at_level(logging.WARNING, logger="ldp_aggregator"):
            Reshuffler(writer, 0).stop()  # its turn, on no tables at all
    finally:
        engine.dispose()
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert failures and all(r.exc_info is None for r in failures)
    assert all("OperationalError" in r.getMessage() for r in failures)


def test_serve_on_a_migrated_schema_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served = _serving_nothing(monkeypatch)
    url = f"sqlite:///{tmp_path / 'ready.db'}"
    assert main(["migrate", "--database-url", url]) == 0
    assert main(["serve", "--port", str(_free_port()), "--database-url", url]) == 0
    assert len(served) == 1
