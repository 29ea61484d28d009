"""Engine factory: one code path for SQLite (embedded default) and PostgreSQL.

A database URL that cannot work is a :class:`ConfigurationError` of one line that says
what to write instead: an unknown scheme (``postgres://``, a typo), a driver that is not
installed; and, from :func:`check_sqlite_folder`, which ``ldpcollect serve`` and
``migrate`` call before they start, a SQLite file in a folder that does not exist (the
engine itself accepts one: a running server whose database folder is gone answers 503
and ``/readyz`` says so).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from ldp_shared.errors import ConfigurationError

ACCEPTED_URLS = "sqlite:///path/to/file.db or postgresql+psycopg://user@host:port/db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_CACHE_KIB = 16_384
"""Page cache per connection. Report ids are random, so every batch touches pages all
over the reports B-tree; a cache larger than SQLite's 2 MiB default keeps ingestion
fast as the table grows."""
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 10_000
"""Checkpoint the WAL every ~40 MiB instead of SQLite's ~4 MiB: with random ids a batch
of 1,000 reports dirties up to 1,000 pages, and checkpointing less often writes a page
that several batches touched once instead of once per batch (about halves commit time
on a table of a few hundred thousand reports). The report writer truncates the log after
every transaction anyway (docs/privacy-at-rest.md); this is the fallback while readers
keep it from doing so."""


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        # WAL: readers never block the writer; FULL: an acknowledged commit survives
        # a power cut; busy_timeout: concurrent writers wait for the lock instead of failing;
        # secure_delete: freed and superseded bytes are zeroed, not left in the file;
        # journal_size_limit=0: a log that restarts is truncated, no stale frames stay
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.execute("PRAGMA journal_size_limit=0")
    finally:
        cursor.close()


def _postgres_session(dbapi_connection: Any, _record: Any) -> None:
    # psycopg prepares a statement on the server once it ran 5 times, and PostgreSQL may
    # then keep one generic plan for it: the id-exists query of ingestion got a plan
    # made while the reports table was new and small, a sequential scan per IN list,
    # and a batch of 10,000 reports took 14-16 s instead of 1.6 s until an ANALYZE
    # dropped the plan. A plan for the values at hand each time costs far less.
    dbapi_connection.execute("SET plan_cache_mode = force_custom_plan")
    dbapi_connection.commit()  # a SET rolled back with the transaction would be undone


def make_engine(database_url: str, **kwargs: Any) -> Engine:
    """A SQLAlchemy engine for ``database_url``, with the SQLite pragmas where they apply."""
    try:
        url = make_url(database_url)
    except (ArgumentError, ValueError):  # ValueError: e.g. a port that is not a number
        # not echoed: an unparsable URL may still hold a password
        raise ConfigurationError(
            f"the database URL cannot be parsed as a URL: write {ACCEPTED_URLS}"
        ) from None
    # LIFO: reuse the most recently used connection, whose page cache is warm. An error's
    # message never shows a statement's parameters: they are report ids and bits, which
    # must not reach a log (docs/privacy-at-rest.md)
    options: dict[str, Any] = {
        "pool_pre_ping": True,
        "pool_use_lifo": True,
        "hide_parameters": True,
    }
    if url.get_backend_name() == "sqlite":
        # the pool hands connections to the request threads one at a time
        options["connect_args"] = {"check_same_thread": False}
        # a file opened in this process does not go stale the way a server's socket
        # does: no SELECT 1 before every checkout
        options["pool_pre_ping"] = False
        if url.database in (None, "", ":memory:"):
            # an in-memory database lives in one connection: share it
            options["poolclass"] = StaticPool
            del options["pool_use_lifo"]
    options.update(kwargs)
    try:
        engine = create_engine(url, **options)
    except NoSuchModuleError:
        raise ConfigurationError(
            f"the database URL scheme {url.drivername + '://'!r} is unknown: write {ACCEPTED_URLS}"
        ) from None
    except ImportError as error:
        raise ConfigurationError(_missing_driver(url, error)) from error
    if url.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    elif url.get_backend_name() == "postgresql" and url.get_driver_name() == "psycopg":
        event.listen(engine, "connect", _postgres_session)
    return engine


def check_sqlite_folder(database_url: str) -> None:
    """Refuse a SQLite file whose folder does not exist (SQLite creates the file only);
    other URLs, in-memory databases and SQLite URIs pass."""
    try:
        url = make_url(database_url)
    except (ArgumentError, ValueError):  # ValueError: e.g. a port that is not a number
        return  # make_engine says what is wrong with it
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return
    if database.startswith("file:"):  # a SQLite URI (?uri=true): SQLite resolves it
        return
    folder = Path(database).parent
    if not folder.is_dir():
        raise ConfigurationError(
            f"the SQLite database {database} cannot be created: its folder {folder} does not"
            " exist (create it, or point the URL at an existing folder)"
        )


def _missing_driver(url: URL, error: ImportError) -> str:
    """One line naming what to install, or what to write, when a URL's driver is missing."""
    module = error.name or "of its driver"
    if url.get_backend_name() != "postgresql":
        return (
            f"the database URL {url.drivername}://... needs the module {module}, which is not"
            f" installed; ldpcollect runs on {ACCEPTED_URLS}"
        )
    return (
        f"the database URL {url.drivername}://... needs the module {module}, "
        'which is not installed: pip install -e ".[postgres]" (or "ldpcollect[postgres]") '
        "and write the URL as postgresql+psycopg://..."
    )


def ping(engine: Engine) -> None:
    """Run ``SELECT 1``; raises when the database cannot be reached."""
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


class KeptConnection:
    """The transactions of one thread that commits all the time, on a connection kept open
    between them.

    The pool checks every connection it hands out with a ``SELECT 1`` (``pool_pre_ping``),
    one more round trip per transaction to a database server: about a seventh of a
    single report's transaction on PostgreSQL (issue 23, docs/benchmarks.md). And a
    checkout and check-in cost about 25 µs of CPU a transaction even on an SQLite file
    (the check-in rolls the connection back), more than a short transaction's own
    statements. A writer keeps its connection instead. When the server drops it, the
    transaction that finds out fails with an error that SQLAlchemy marks
    ``connection_invalidated``, and the next :meth:`transaction` opens a new one: the
    caller writes again (:class:`~ldp_aggregator.writer.ReportWriter` does, once). An
    in-memory SQLite database, one connection shared by every thread, is used through
    the pool as before. Between transactions a kept connection holds no lock and no
    snapshot (an SQLite connection outside a transaction does not hold back a checkpoint
    of the write-ahead log). ``engine.dispose()`` replaces a kept connection too, at its
    next transaction, as it replaces the pool's.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        in_memory = engine.url.database in (None, "", ":memory:")
        self.kept = engine.dialect.name != "sqlite" or not in_memory
        self._connection: Connection | None = None
        self._pool = engine.pool  # the pool it came from (dispose() makes a new one)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A transaction, committed when the block ends (rolled back if it raises)."""
        if not self.kept:
            with self.engine.begin() as connection:
                yield connection
            return
        if (
            self._connection is None
            or self._connection.invalidated
            or self.engine.pool is not self._pool
        ):
            self.close()
            self._pool = self.engine.pool
            self._connection = self.engine.connect()
        connection = self._connection
        with connection.begin():
            yield connection

    def close(self) -> None:
        """Give the kept connection back to the pool."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
