"""What keeps arrival order out of the database files (docs/privacy-at-rest.md).

* :func:`truncate_wal` (SQLite): checkpoint the write-ahead log into the main file and
  truncate it to zero bytes, so that the log never holds more than the transactions
  since the last call. It does not wait for readers: while one still reads an older
  snapshot the log cannot be reset, and the next call tries again.
* :func:`rewrite_reports`: rebuild the stored reports so that their layout depends on
  the stored rows alone, not on the order or the requests they came in. Rows are
  written in key order; report ids are random, so key order says nothing of arrival.
  SQLite: ``VACUUM`` (every table rebuilt into fresh pages, the file shrunk), then
  :func:`truncate_wal`. PostgreSQL: in one transaction, copy ``reports`` into a
  temporary table, ``TRUNCATE`` it (a new, empty file) and copy the rows back: the heap
  and the primary-key index are rebuilt in key order, every row carries the same
  ``xmin`` (the rewriting transaction's), and the statistics rows are rewritten the
  same way so that no dead versions of them (one per ingest transaction) remain.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError, OperationalError

from ldp_aggregator.storage.engine import SQLITE_BUSY_TIMEOUT_MS
from ldp_aggregator.storage.tables import collection_stats, reports

logger = logging.getLogger("ldp_aggregator")

PG_REWRITE_LOCK = 0x6C647072  # "ldpr", with the table's oid: one rewrite at a time
PG_CLIENT_CHECK_MS = 1000
"""How often PostgreSQL checks, during a rewrite's statements, that the rewriting process
is still connected. Without it a rewriter killed mid-copy (``kill -9``, or an
orchestrator's grace period running out during the rewrite at shutdown) left the server
finishing the copy under the tables' exclusive lock, every replica's ingestion waiting,
for as long as the copy takes (minutes for tens of millions of reports)."""
PG_LOCK_TIMEOUT = "5s"
"""How long a rewrite waits for the tables before giving up until its next turn (a long
read, such as an itemset snapshot, holds them; ingestion queues behind the waiting
rewrite meanwhile, so the wait is kept short)."""


def truncate_wal(engine: Engine) -> bool:
    """Checkpoint and empty SQLite's ``-wal`` file; ``True`` when it is empty now.

    Other dialects have nothing to do here (``True``).
    """
    if engine.dialect.name != "sqlite":
        return True
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("PRAGMA busy_timeout=0")
        try:
            busy, _, _ = connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
        finally:
            connection.exec_driver_sql(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    return int(busy) == 0


class WalTruncator:
    """:func:`truncate_wal` on a connection of its own, kept open (for the report writer,
    which truncates after every transaction): one statement per call instead of a pool
    checkout and four. Engines that are not SQLite files have nothing to truncate."""

    def __init__(self, engine: Engine) -> None:
        database = engine.url.database
        self._applies = engine.dialect.name == "sqlite" and database not in (None, "", ":memory:")
        self._engine = engine
        self._connection: Any = None

    def truncate(self) -> bool:
        """Checkpoint and empty the ``-wal`` file; ``True`` when it is empty now."""
        if not self._applies:
            return True
        if self._connection is None:
            connection = self._engine.raw_connection()
            connection.detach()  # its own, closed by close(), never back in the pool
            connection.cursor().execute("PRAGMA busy_timeout=0")  # never wait for readers
            self._connection = connection
        try:
            cursor = self._connection.cursor()
            busy, _, _ = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except Exception:
            self.close()  # a broken connection: the next call opens another
            raise
        return int(busy) == 0

    def close(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            connection.close()


def rewrite_reports(engine: Engine) -> bool:
    """Rebuild the reports (and statistics) tables out of arrival order.

    Returns ``False`` when it did not run: on PostgreSQL another replica is rewriting or
    the tables stayed locked for :data:`PG_LOCK_TIMEOUT`. The caller must keep other
    writers of this process out meanwhile (:class:`~ldp_aggregator.writer.ReportWriter`
    does); those of other processes wait on the database's own locks.
    """
    if engine.dialect.name == "sqlite":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM")
        truncate_wal(engine)
        return True
    try:
        with engine.begin() as connection:
            return _rewrite_postgres(connection)
    except OperationalError as error:  # lock_timeout: try again at the next turn
        logger.warning("reports not rewritten this time: %s", error.orig)
        return False


def _cancel_when_the_client_goes(connection: Connection) -> None:
    """``client_connection_check_interval`` for this transaction (PostgreSQL 14 and newer,
    on the systems whose kernel reports a closed peer; elsewhere the setting is refused
    and the rewrite goes on without it)."""
    if (connection.dialect.server_version_info or (0,)) < (14,):
        return
    try:
        with connection.begin_nested():
            connection.execute(
                text(f"SET LOCAL client_connection_check_interval = {PG_CLIENT_CHECK_MS}")
            )
    except DBAPIError:  # "must be set to 0 on this platform"
        logger.info("PostgreSQL cannot check for a lost client here; rewriting without it")


def _rewrite_postgres(connection: Connection) -> bool:
    # keyed by the table's oid too: databases with several schemas rewrite independently
    taken = connection.execute(
        text(
            "SELECT pg_try_advisory_xact_lock(:key, "
            "CAST(CAST(CAST(CAST(:table AS regclass) AS oid) AS bigint) - 2147483648 AS integer))"
        ),
        {"key": PG_REWRITE_LOCK, "table": reports.name},
    )
    if not taken.scalar_one():
        return False
    quote = connection.dialect.identifier_preparer.quote
    tables = (collection_stats, reports)  # the order in which ingestion locks them
    connection.execute(text(f"SET LOCAL lock_timeout = '{PG_LOCK_TIMEOUT}'"))
    _cancel_when_the_client_goes(connection)
    names = ", ".join(quote(table.name) for table in tables)
    connection.execute(text(f"LOCK TABLE {names} IN ACCESS EXCLUSIVE MODE"))
    for table in tables:
        name, copy = quote(table.name), quote(f"rewrite_{table.name}")
        key = ", ".join(quote(column.name) for column in table.primary_key.columns)
        connection.execute(
            text(
                f"CREATE TEMPORARY TABLE {copy} ON COMMIT DROP AS "
                f"SELECT * FROM {name} ORDER BY {key}"
            )
        )
        connection.execute(text(f"TRUNCATE {name}"))
        connection.execute(text(f"INSERT INTO {name} SELECT * FROM {copy} ORDER BY {key}"))
    return True
