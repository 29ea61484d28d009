"""The device's ledger: the ε it has spent and the reports it has made, per collection.

One SQLite file (stdlib :mod:`sqlite3`) that the device owner chooses. It holds

* ``spending``: one row per batch of reports the SDK made, appended in the same
  transaction that checks the policy's report limit, *before* any of those reports can
  be sent. A crash after that commit over-counts (reports charged, never sent); a crash
  before it leaves nothing to send. The ledger never shows less than what was sent.
* ``memo``: for collections the owner memoises (permanent randomized response, after
  RAPPOR), a keyed hash of each record (HMAC-SHA256) → the packed perturbed report first
  made for it. Raw values are not stored, but the key decides what the hashes protect:
  by default it is a random per-ledger secret kept in the file itself, so whoever reads
  the file can hash candidate records and find which were memoised (over small domains,
  all of them): a memoising ledger is then as sensitive as the records. Pass
  ``memo_key`` (kept elsewhere, e.g. in the OS keystore) and the file alone reveals
  nothing of the records.
* ``distinct_values``: for longitudinal attributes (:mod:`ldp_client.longitudinal`), one
  row per distinct memoised key the device reported (a keyed hash, as the memo's), with
  the ε∞ it was charged once; the permanent randomization itself is derived from a
  per-collection secret (:meth:`Ledger.permanent_secret`), not stored.
* ``participations``: one row per training job the device took part in (its collection
  and job id, the ε and δ of its one report), written before the report can be sent; the
  primary key refuses a second participation in the same job.
* ``ledger_meta``: the format version and the default HMAC secret.

Why SQLite: a transaction opened with ``BEGIN IMMEDIATE`` takes the file's write lock
before it reads, so two processes sharing the file serialise their check-and-charge
(the second waits up to ``timeout`` seconds); its rollback journal makes every commit
atomic and durable (``synchronous=FULL``), so ``kill -9`` or a power cut at any point
leaves either the old or the new state, never a torn one. A JSON file would need the
same (a lock file, write-to-temporary, fsync, rename, fsync of the folder) by hand.

The calls are short and synchronous; an asynchronous client makes them inline.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import numpy as np
from numpy.typing import NDArray

from ldp_client.ledger_schema import SCHEMA
from ldp_client.longitudinal import (
    ValueCharge,
    epsilon_spent,
    record_values,
    unseen_values,
)
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import AlreadyParticipatedError, ConfigurationError

if TYPE_CHECKING:
    from ldp_client.policy import DevicePolicy

__all__ = ["LEDGER_FORMAT", "Ledger", "Spending"]

LEDGER_FORMAT = 1


@dataclass(frozen=True)
class Spending:
    """What the ledger has charged: reports made, those that spent ε, and that ε.

    ``reports`` counts every report made (memoised repeats included); ``charged`` those
    perturbed afresh, each costing the collection's ε per record (without its
    longitudinal attributes); ``values`` the distinct memoised keys of longitudinal
    attributes, each costing its ε∞ once; ``epsilon`` the sum of it all.
    """

    reports: int
    charged: int
    epsilon: float
    values: int = 0


class Ledger:
    """The ledger file at ``path`` (created, with owner-only permissions, if missing).

    Safe to share between threads, clients and processes. ``timeout``: how long a
    transaction waits for another process's one to finish before failing. ``memo_key``:
    the HMAC key of the memo (at least 16 bytes, kept outside the file); by default a
    secret stored in the file (see the module docstring for what that means).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        memo_key: bytes | None = None,
    ) -> None:
        if memo_key is not None and (not isinstance(memo_key, bytes) or len(memo_key) < 16):
            raise ConfigurationError("memo_key must be at least 16 random bytes")
        self._path = Path(path)
        self._lock = threading.Lock()
        try:
            descriptor = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ConfigurationError(f"cannot open the ledger file {str(path)!r}: {exc}") from exc
        os.close(descriptor)
        self._db = sqlite3.connect(
            self._path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._db.execute("PRAGMA synchronous = FULL")
            stored = self._initialise()
            self._secret = stored if memo_key is None else memo_key
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ConfigurationError(
                f"{str(path)!r} is not a readable ldpcollect ledger: {exc}"
            ) from exc

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Close the file (a committed ledger needs nothing else)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({str(self._path)!r})"

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed if the block ends normally."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _initialise(self) -> bytes:
        with self._write() as db:
            # one statement at a time: executescript would commit the open transaction
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            db.execute(
                "INSERT OR IGNORE INTO ledger_meta (key, value)"
                " VALUES ('format', ?), ('secret', ?)",
                (str(LEDGER_FORMAT).encode(), secrets.token_bytes(32)),
            )
            meta = dict(db.execute("SELECT key, value FROM ledger_meta").fetchall())
        if meta.get("format") != str(LEDGER_FORMAT).encode():
            raise sqlite3.DatabaseError(f"ledger format {meta.get('format')!r} is not supported")
        secret = meta["secret"]
        if not isinstance(secret, bytes) or len(secret) < 16:
            raise sqlite3.DatabaseError("the ledger's secret is missing or too short")
        return secret

    # ------------------------------------------------------------------ charging

    def record_key(self, config_hash: str, canonical_record: bytes) -> bytes:
        """The keyed hash a memoised record is stored under (HMAC-SHA256, per-ledger secret).

        The config hash is part of the message, so equal records of two collections get
        unrelated keys.
        """
        message = config_hash.encode("ascii") + b"\n" + canonical_record
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def permanent_secret(self, config_hash: str) -> bytes:
        """The device's secret for a collection's longitudinal attributes: their permanent
        randomization is derived from it (:mod:`ldp_shared.mechanisms.longitudinal`), so
        it is the same on every run (HMAC-SHA256 of the config hash, per-ledger key)."""
        message = b"permanent randomization\n" + config_hash.encode("ascii")
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def value_key(self, config_hash: str, attribute: str, memo_key: int) -> bytes:
        """The keyed hash a longitudinal attribute's memoised key is charged under."""
        return self.record_key(config_hash, f"value\n{attribute}\n{memo_key}".encode())

    def reserve(
        self,
        config: CollectionConfig,
        packed: NDArray[np.uint8],
        *,
        record_keys: Sequence[bytes] | None = None,
        policy: DevicePolicy | None = None,
        values: Sequence[ValueCharge] = (),
    ) -> NDArray[np.uint8]:
        """Charge the reports ``packed`` (``n × report_bytes``) before they can be sent.

        In one transaction: check ``policy``'s report limit against what this ledger
        has made for the collection (raising its
        :class:`~ldp_shared.errors.PrivacyPolicyError` with nothing charged); with
        ``record_keys`` (one per row, memoised collections), replace each row whose
        record was reported before by its first report and remember the others; append
        the spending row (ε charged only for rows perturbed afresh, at the ε of the
        attributes that are not longitudinal); charge ε∞ for each key of ``values`` met
        for the first time; check ``policy``'s limit on the ε of the collection. Returns
        the rows to send.
        """
        rows = np.array(packed, dtype=np.uint8, copy=True)
        n = rows.shape[0]
        if record_keys is not None and len(record_keys) != n:
            raise ValueError("record_keys must hold one key per report")
        if n == 0:
            return rows
        with self._write() as db:
            if policy is not None:
                made = self._reports_made(db, config.config_hash)
                policy.check_report_count(config, made, n)
            charged = n if record_keys is None else self._memoise(db, config, rows, record_keys)
            per_report = config.privacy.charged_per_report.epsilon
            new_values = unseen_values(db, config.config_hash, values)
            if policy is not None:
                cost = charged * per_report + sum(eps for _, _, eps in new_values)
                spent = epsilon_spent(db, config.config_hash)
                policy.check_collection_epsilon(config, spent, cost)
            record_values(db, config, new_values)
            db.execute(
                "INSERT INTO spending (collection, config_hash, reports, charged,"
                " epsilon_per_record, epsilon, made_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    config.name,
                    config.config_hash,
                    n,
                    charged,
                    per_report,
                    charged * per_report,
                    _now(),
                ),
            )
        return rows

    def reserve_participation(
        self, collection: str, job: str, epsilon: float, delta: float
    ) -> None:
        """Charge the one report of a training job before it can be sent, or raise
        :class:`AlreadyParticipatedError` (nothing charged) if this device took part in
        that job before."""
        with self._write() as db:
            try:
                db.execute(
                    "INSERT INTO participations (collection, job, epsilon, delta, made_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (collection, job, epsilon, delta, _now()),
                )
            except sqlite3.IntegrityError:
                raise AlreadyParticipatedError(
                    f"this device took part in training job {job!r} of collection"
                    f" {collection!r} already (its ledger says so); a job takes one report"
                    " per device"
                ) from None

    def participated(self, collection: str, job: str) -> bool:
        """Whether the ledger charged a report of this training job."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM participations WHERE collection = ? AND job = ?", (collection, job)
            ).fetchone()
        return row is not None

    @staticmethod
    def _reports_made(db: sqlite3.Connection, config_hash: str) -> int:
        row = db.execute(
            "SELECT COALESCE(SUM(reports), 0) FROM spending WHERE config_hash = ?", (config_hash,)
        ).fetchone()
        return int(row[0])

    @staticmethod
    def _memoise(
        db: sqlite3.Connection,
        config: CollectionConfig,
        rows: NDArray[np.uint8],
        record_keys: Sequence[bytes],
    ) -> int:
        """Reuse remembered reports in ``rows``, remember the new ones; the number of new ones."""
        fresh = 0
        for index, key in enumerate(record_keys):
            found = db.execute(
                "SELECT bits FROM memo WHERE config_hash = ? AND record_key = ?",
                (config.config_hash, key),
            ).fetchone()
            if found is None:
                db.execute(
                    "INSERT INTO memo (config_hash, record_key, bits) VALUES (?, ?, ?)",
                    (config.config_hash, key, rows[index].tobytes()),
                )
                fresh += 1
                continue
            bits = found[0]
            if not isinstance(bits, bytes) or len(bits) != config.report_bytes:
                raise ConfigurationError(
                    f"the ledger's memoised report for collection {config.name!r} is damaged"
                )
            rows[index] = np.frombuffer(bits, dtype=np.uint8)
        return fresh

    # ------------------------------------------------------------------ reading

    def spending(self, collection: str | None = None) -> Spending:
        """What was charged for the collection named ``collection`` (all of them: ``None``).

        Summed over every config hash the name had, over its training jobs (one charged
        report each) and its longitudinal attributes' distinct keys (ε∞ each); the
        device's total when ``None``.
        """
        where, params = ("", ()) if collection is None else (" WHERE collection = ?", (collection,))
        reports_query = "SELECT COALESCE(SUM(reports), 0), COALESCE(SUM(charged), 0),"
        reports_query += " COALESCE(SUM(epsilon), 0.0) FROM spending" + where
        count = "SELECT COUNT(*), COALESCE(SUM(epsilon), 0.0) FROM {}" + where
        with self._lock:
            reports, charged, epsilon = self._db.execute(reports_query, params).fetchone()
            jobs, jobs_epsilon = self._db.execute(count.format("participations"), params).fetchone()
            values, values_epsilon = self._db.execute(
                count.format("distinct_values"), params
            ).fetchone()
        return Spending(
            reports=int(reports) + int(jobs),
            charged=int(charged) + int(jobs),
            epsilon=float(epsilon) + float(jobs_epsilon) + float(values_epsilon),
            values=int(values),
        )

    def memoised(self, config_hash: str) -> int:
        """How many distinct records of the collection with this config hash are memoised."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM memo WHERE config_hash = ?", (config_hash,)
            ).fetchone()
        return int(row[0])

    def inconsistencies(self) -> list[str]:
        """What is wrong with the file (empty when it is sound).

        SQLite's own integrity check, then the ledger's invariants: every spending row
        charges its ε per record for each fresh report, and no collection has more
        memoised records than reports it charged.
        """
        problems: list[str] = []
        with self._lock:
            checked = [row[0] for row in self._db.execute("PRAGMA integrity_check")]
            if checked != ["ok"]:
                problems.extend(f"sqlite: {message}" for message in checked)
            bad_rows = self._db.execute(
                "SELECT id FROM spending WHERE abs(epsilon - charged * epsilon_per_record)"
                " > 1e-9 * max(1.0, epsilon) OR charged > reports"
            ).fetchall()
            problems.extend(f"spending row {row[0]}: ε does not match" for row in bad_rows)
            over = self._db.execute(
                "SELECT memo.config_hash FROM memo GROUP BY memo.config_hash HAVING COUNT(*) >"
                " (SELECT COALESCE(SUM(charged), 0) FROM spending"
                "  WHERE spending.config_hash = memo.config_hash)"
            ).fetchall()
            problems.extend(f"config {row[0]}: more memoised records than charged" for row in over)
        return problems


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
