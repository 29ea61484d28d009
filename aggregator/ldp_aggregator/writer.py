"""The one writer of reports per app: group commit, a short log, periodic rewrites.

Why (docs/privacy-at-rest.md): a database keeps the order in which rows were written
in places no SQL query shows: SQLite's write-ahead log appends one set of pages per
transaction, and PostgreSQL numbers every transaction (``xmin``) and appends rows to
the heap. Left alone, both tell a reader of the files which reports came in one request
and in what order. The writer bounds that:

* **Group commit.** A request that finds the writer idle commits its reports at once.
  Requests that arrive while a transaction is being written wait, and the next
  transaction writes all of them together, in key order (report ids are random), with
  one lock of each collection's statistics and one ``fsync``. Each request is answered
  only after the transaction holding its reports has committed: acknowledged reports
  are durable, and a group that fails is retried request by request, so one bad request
  cannot fail the others. Concurrent requests thus share one transaction (one ``xmin``,
  one commit in the log) and cannot be told apart in the files.
* **A short log (SQLite).** After every transaction the write-ahead log is checkpointed
  and truncated (:func:`~ldp_aggregator.storage.at_rest.truncate_wal`), while the next
  group gathers.
* **Periodic rewrite.** :meth:`ReportWriter.rewrite` rebuilds the tables out of arrival
  order (:func:`~ldp_aggregator.storage.at_rest.rewrite_reports`); :class:`Reshuffler`
  calls it every ``reshuffle_seconds`` when reports were written since, and once more
  at shutdown.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError

from ldp_aggregator.storage.at_rest import rewrite_reports, truncate_wal
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import gone, refusal_to_write
from ldp_aggregator.storage.reports import existing_ids, insert_reports
from ldp_aggregator.storage.retention import fold_expired
from ldp_aggregator.storage.stats import (
    Stats,
    add_to_stats,
    lock_stats,
    read_stats,
    statistics_of,
    sum_stats,
)
from ldp_shared.errors import LDPError

logger = logging.getLogger("ldp_aggregator")


@dataclass(eq=False)
class Pending:
    """One request's new valid reports (ids unique, in batch order), waiting for a commit.

    ``matrix`` holds their packed bits and ``delta`` the statistics they add. Once done,
    ``stored_before`` holds the ids that were stored already (or taken by an earlier
    request of the same transaction), or ``error`` why nothing was stored.
    """

    collection: StoredCollection
    ids: list[str]
    matrix: NDArray[np.uint8]
    delta: Stats
    day: date
    stored_before: set[str] = field(default_factory=set)
    error: BaseException | None = None
    done: bool = False


class ReportWriter:
    """Writes reports for every request thread of an app (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.transactions = 0
        """Transactions committed so far (groups, not requests)."""
        self.written_since_rewrite = 0
        """Reports this writer wrote since its last rewrite."""
        self._rewritten = False
        self._cond = threading.Condition()
        self._queue: list[Pending] = []
        self._busy = False

    def store(self, pending: Pending) -> set[str]:
        """Write ``pending`` in the next transaction; returns its ids that were stored
        already. Returns only after that transaction committed (or raises its error)."""
        group: list[Pending] = []
        with self._cond:
            self._queue.append(pending)
            while self._busy and not pending.done:
                self._cond.wait()
            if not pending.done:  # the writer is idle: lead the next transaction
                self._busy = True
                group, self._queue = self._queue, []
        if group:
            try:
                self._write(group)
                self._truncate_wal()
            finally:
                self._release(group)
        if pending.error is not None:
            raise pending.error
        return pending.stored_before

    @property
    def queued(self) -> int:
        """Requests waiting for the next transaction."""
        with self._cond:
            return len(self._queue)

    @property
    def needs_rewrite(self) -> bool:
        """Reports were written since the last rewrite, or none ran yet (the files may
        hold the order of a process that stopped without one)."""
        return self.written_since_rewrite > 0 or not self._rewritten

    def rewrite(self) -> bool:
        """Rebuild the stored reports out of arrival order, between two transactions
        (``False``: not this time, see :func:`rewrite_reports`)."""
        with self._exclusive():
            if not rewrite_reports(self.engine):
                return False
            self.written_since_rewrite = 0
            self._rewritten = True
            return True

    def _truncate_wal(self) -> None:
        try:
            truncate_wal(self.engine)
        except Exception:  # the transaction committed: its requests must not fail now
            logger.exception("the write-ahead log was not truncated")

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._busy:
                self._cond.wait()
            self._busy = True
        try:
            yield
        finally:
            self._release([])

    def _release(self, group: list[Pending]) -> None:
        with self._cond:
            for pending in group:
                if not pending.done:  # the writing thread was interrupted
                    pending.error = RuntimeError("the report writer was interrupted")
                    pending.done = True
            self._busy = False
            self._cond.notify_all()

    def _write(self, group: list[Pending]) -> None:
        try:
            befores = self._commit_retrying(group)
        except Exception as error:
            if len(group) > 1:  # find the culprit: every request on its own
                for pending in group:
                    self._write([pending])
                return
            befores = None
            group[0].error = error
        with self._cond:
            for k, pending in enumerate(group):
                if befores is not None:
                    pending.stored_before = befores[k]
                pending.done = True
            self._cond.notify_all()  # answer the group before the log is truncated

    def _commit_retrying(self, group: list[Pending]) -> list[set[str]]:
        try:
            return self._commit(group)
        except IntegrityError:
            # another process stored one of the ids between our check and our insert
            # (possible only without the statistics lock, across replicas): redo once
            return self._commit(group)

    def _commit(self, group: list[Pending]) -> list[set[str]]:
        """One transaction for the whole group; the ids stored before, per request. A
        request whose collection is closed or deleted gets its ``error`` and writes nothing."""
        members: dict[tuple[int, str], list[int]] = defaultdict(list)
        for k, pending in enumerate(group):
            pending.error = None
            members[pending.collection.id, pending.collection.config.config_hash].append(k)
        befores: list[set[str]] = [set() for _ in group]
        written = 0
        with self.engine.begin() as connection:
            refused: dict[tuple[int, str], LDPError] = {}
            for key in sorted(members):  # one lock order for every writer
                collection = group[members[key][0]].collection
                locked = lock_stats(connection, collection.id)
                refusal = refusal_to_write(connection, collection) if locked else gone(collection)
                if refusal is not None:
                    refused[key] = refusal
            for key in sorted(members):
                part = [group[k] for k in members[key]]
                if key in refused:
                    for pending in part:
                        pending.error = refused[key]
                    continue
                seen, fresh = _store_collection(connection, part)
                for k, before in zip(members[key], seen, strict=True):
                    befores[k] = before
                written += fresh
        self.transactions += 1
        self.written_since_rewrite += written
        return befores


def _store_collection(connection: Connection, part: list[Pending]) -> tuple[list[set[str]], int]:
    """Insert the new reports of requests of one collection, in key order, and add their
    statistics; the ids each request found stored, and how many reports were written."""
    collection = part[0].collection
    config = collection.config
    taken = existing_ids(connection, collection.id, [i for p in part for i in p.ids])
    rows: dict[date, list[tuple[str, bytes]]] = defaultdict(list)
    deltas: list[Stats] = []
    befores: list[set[str]] = []
    for pending in part:
        fresh = [k for k, report_id in enumerate(pending.ids) if report_id not in taken]
        befores.append({report_id for report_id in pending.ids if report_id in taken})
        taken.update(pending.ids)
        if not fresh:
            continue
        if len(fresh) == len(pending.ids):
            matrix, delta = pending.matrix, pending.delta
        else:
            matrix = pending.matrix[fresh]
            delta = statistics_of(config, matrix)
        ids = [pending.ids[k] for k in fresh]
        rows[pending.day].extend(zip(ids, (row.tobytes() for row in matrix), strict=True))
        deltas.append(delta)
    for day in sorted(rows):
        insert_reports(connection, collection.id, sorted(rows[day]), day)
    if deltas:
        current = read_stats(
            connection, collection.id, config.stats_length, config.float_stats_length
        )
        add_to_stats(connection, collection.id, current, sum_stats(deltas))
    return befores, sum(delta.n_reports for delta in deltas)


class Reshuffler:
    """Rewrites the reports every ``seconds`` when :attr:`ReportWriter.needs_rewrite`
    (0: never periodically), in a thread of its own, and once more when stopped; folds
    expired reports (:func:`~ldp_aggregator.storage.retention.fold_expired`) on each turn."""

    def __init__(self, writer: ReportWriter, seconds: float) -> None:
        self.writer = writer
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.seconds > 0:
            self._thread = threading.Thread(target=self._run, name="ldp-reshuffle", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread, then rewrite once more if needed (the files at rest keep no
        order after a clean shutdown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._turn()

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            self._turn()

    def _turn(self) -> None:
        try:
            # the rewrite then drops the old row versions, bits and all (PostgreSQL)
            self.writer.written_since_rewrite += fold_expired(self.writer.engine)
        except Exception:  # logged; the next turn tries again
            logger.exception("folding expired reports failed")
        if not self.writer.needs_rewrite:
            return
        try:
            self.writer.rewrite()
        except Exception:  # logged; the next turn tries again
            logger.exception("rewriting the reports failed")
