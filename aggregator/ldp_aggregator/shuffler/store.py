"""What the shuffler holds: sealed blobs in SQLite, with nothing that orders them.

A row is ``(id, collection, blob)``: ``id`` is 16 random bytes (:func:`secrets.token_bytes`)
and the table is ``WITHOUT ROWID``, so rows sit in the B-tree by random id, not by
arrival; no address, header or time is stored. The journal is a rollback journal
(``journal_mode=DELETE``) with ``synchronous=FULL``: a blob is on disk before its upload
is acknowledged, so a kill -9 loses nothing acknowledged, and no write-ahead log keeps
blobs in arrival order after a commit.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from pathlib import Path

__all__ = ["BlobStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS held (id BLOB PRIMARY KEY, collection TEXT NOT NULL,"
    " blob BLOB NOT NULL) WITHOUT ROWID"
)


def _random_id() -> bytes:
    """A row's id: 16 bytes from the operating system's CSPRNG."""
    return secrets.token_bytes(16)


class BlobStore:
    """The shuffler's durable pool of sealed blobs, per collection (thread safe)."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA secure_delete=ON")  # forwarded blobs leave no trace
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def hold(self, collection: str, blobs: list[bytes]) -> None:
        """Store ``blobs`` for ``collection`` durably (one transaction, fsynced)."""
        rows = [(_random_id(), collection, blob) for blob in blobs]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT INTO held VALUES (?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def counts(self) -> dict[str, int]:
        """How many blobs are held, per collection."""
        with self._lock:
            query = "SELECT collection, COUNT(*) FROM held GROUP BY collection"
            return {str(name): int(count) for name, count in self._db.execute(query)}

    def take(self, collection: str, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` held ``(id, blob)`` pairs of ``collection`` (still held)."""
        with self._lock:
            query = "SELECT id, blob FROM held WHERE collection = ? LIMIT ?"
            return [(bytes(i), bytes(b)) for i, b in self._db.execute(query, (collection, limit))]

    def release(self, ids: list[bytes]) -> None:
        """Delete forwarded blobs (after the aggregator acknowledged them)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM held WHERE id = ?", [(i,) for i in ids])
            self._db.execute("COMMIT")

    def drop(self, collection: str) -> int:
        """Delete every blob held for ``collection`` (the aggregator refuses them for
        good); how many there were."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            dropped = self._db.execute("DELETE FROM held WHERE collection = ?", (collection,))
            self._db.execute("COMMIT")
            return int(dropped.rowcount)
