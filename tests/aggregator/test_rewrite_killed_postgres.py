"""A rewriter killed mid-rewrite does not leave PostgreSQL holding the tables.

The rewrite (``storage/at_rest.py``) waits for the tables' exclusive lock, as it does
behind a long read; the process is killed (``kill -9``) meanwhile. PostgreSQL must end
its statement within about ``PG_CLIENT_CHECK_MS`` of the kill, not when the statement
would have ended on its own: here the wait is given two minutes
(``PG_LOCK_TIMEOUT``), and the backend must be gone in a sixth of that.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, text

from .test_postgres import BASE_URL, pg, pg_url  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not BASE_URL, reason="needs PostgreSQL")

LOCK_WAIT = 120.0  # what the killed rewrite would wait for the lock, if not cancelled
GONE_WITHIN = 20.0
REWRITER = """
import sys
from ldp_aggregator.storage import at_rest
from ldp_aggregator.storage.engine import make_engine
at_rest.PG_LOCK_TIMEOUT = "{wait}s"
at_rest.rewrite_reports(make_engine(sys.argv[1]))
"""


@pytest.fixture
def tables_held(pg: Engine) -> Iterator[Connection]:  # noqa: F811
    """A transaction holding a shared lock on ``reports`` (as a long read does)."""
    with pg.connect() as connection:
        transaction = connection.begin()
        connection.execute(text("LOCK TABLE reports IN ACCESS SHARE MODE"))
        yield connection
        transaction.rollback()


def _waiting_rewrite(connection: Connection) -> int | None:
    return connection.execute(
        text(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE 'LOCK TABLE%' AND pid <> pg_backend_pid()"
        )
    ).scalar()


def _alive(connection: Connection, pid: int) -> bool:
    query = text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
    return bool(connection.execute(query, {"pid": pid}).scalar_one())


def test_a_killed_rewrite_releases_the_tables(
    pg: Engine,  # noqa: F811
    pg_url: str,  # noqa: F811
    tables_held: Connection,
) -> None:
    code = REWRITER.format(wait=int(LOCK_WAIT))
    rewriter = subprocess.Popen([sys.executable, "-c", code, pg_url])
    with pg.connect().execution_options(isolation_level="AUTOCOMMIT") as watcher:
        try:
            deadline = time.monotonic() + 60
            while (backend := _waiting_rewrite(watcher)) is None:
                assert rewriter.poll() is None, "the rewrite ended before waiting for the lock"
                assert time.monotonic() < deadline, "the rewrite never waited for the lock"
                time.sleep(0.1)
        finally:
            rewriter.kill()
            rewriter.wait()
        killed = time.monotonic()
        while _alive(watcher, backend):
            assert time.monotonic() - killed < GONE_WITHIN, "PostgreSQL kept the dead rewrite"
            time.sleep(0.2)
