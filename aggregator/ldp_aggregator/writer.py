"""The one writer of reports per app: group commit, a short log, periodic rewrites.

Why (docs/privacy-at-rest.md): a database keeps the order in which rows were written
in places no SQL query shows: SQLite's write-ahead log appends one set of pages per
transaction, and PostgreSQL numbers every transaction (``xmin``) and appends rows to
the heap. Left alone, both tell a reader of the files which reports came in one request
and in what order. The writer bounds that:

* **Group commit.** Requests hand their reports to the writer's thread. Requests that
  arrive while it writes a transaction wait, and the next transaction writes all of them
  together, in key order (report ids are random), with one ``fsync``. Each request is
  answered only after the transaction holding its reports has committed: acknowledged
  reports are durable, and a group that fails is retried request by request, so one bad
  request cannot fail the others. Concurrent requests thus share one transaction (one
  ``xmin``, one commit in the log) and cannot be told apart in the files. Async request
  handlers wait without a thread of their own (:meth:`ReportWriter.store_async`).
* **A short log (SQLite).** After every transaction the write-ahead log is checkpointed
  and truncated (:class:`~ldp_aggregator.storage.at_rest.WalTruncator`) before the
  writer takes the next group, so the log never holds more than the transaction in
  progress. The group is answered between its commit and the truncation, so that its
  clients' next requests arrive meanwhile (1.18x the single-report requests/s of
  answering after it; docs/privacy-at-rest.md).
* **Periodic rewrite.** :meth:`ReportWriter.rewrite` rebuilds the tables out of arrival
  order (:func:`~ldp_aggregator.storage.at_rest.rewrite_reports`);
  :class:`~ldp_aggregator.reshuffler.Reshuffler` calls it as soon as the app starts,
  then every ``reshuffle_seconds`` when reports were written since, and once more at
  shutdown.

A transaction locks each collection it writes against closing and deleting
(:func:`~ldp_aggregator.storage.lifecycle.refusal_to_write`), claims one of its
statistics shards (:func:`~ldp_aggregator.storage.stats.claim_shard`), inserts the
reports skipping stored ids, and adds the statistics of the reports it stored to the
shard, so that each report counts once. PostgreSQL's insert answers which ids it stored
(exact even while another replica stores the same ids). SQLite's only counts them; when
it falls short (a replay), the transaction is rolled back and written again with the
stored ids looked up first, which is exact because it holds SQLite's one write lock.

A device's upload holds one report: the request checks its id, config hash and bits and
leaves decoding to the writer, which decodes the single reports of a group in one
vectorised call before the transaction (:func:`decode_singles`) and answers one that
does not decode as rejected, writing nothing of it. The statements every transaction
runs are compiled once per dialect (:mod:`~ldp_aggregator.storage.driver`; issue 23).

This module is longer than most (about 480 lines) on purpose: the writer's thread, its
transaction and the replay rewrite are one protocol whose promises (answer after commit,
one lock order, each report counted once) are checked by reading them together; the
storage steps it calls live in :mod:`ldp_aggregator.storage`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from ldp_aggregator.storage.at_rest import WalTruncator, rewrite_reports
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.engine import KeptConnection
from ldp_aggregator.storage.lifecycle import gone, refusal_to_write
from ldp_aggregator.storage.reports import (
    existing_ids,
    insert_reports,
    insert_reports_returning,
)
from ldp_aggregator.storage.stats import (
    ClaimedShard,
    Stats,
    add_to_shard,
    claim_shard,
    prepare_period,
    statistics_of,
    sum_stats,
)
from ldp_shared.codec import decode_reports
from ldp_shared.errors import LDPError

logger = logging.getLogger("ldp_aggregator")

ATTEMPTS = 2
"""Transactions tried per group before its requests fail: the first inserts blind; on
SQLite, when ids turn out stored, the second looks them up first (see :func:`_insert`)."""


@dataclass(eq=False)
class Pending:
    """One request's new valid reports (ids unique, in batch order), waiting for a commit.

    ``matrix`` holds their packed bits and ``delta`` the statistics they add, to those of
    the period ``period_start``; ``day`` is stored with them (both as coarse as the
    collection's period, :func:`ldp_shared.periods.stamp`). Once done,
    ``stored_before`` holds the ids that were stored already (or taken by an earlier
    request of the same transaction), or ``error`` why nothing was stored. ``future``
    (with its ``loop``) is settled once done, for a request that waits in an event loop.

    ``delta`` ``None``: one report whose bits passed every check but decoding (a device's
    single report, :func:`~ldp_aggregator.ingest.ingest_batch_async`); the writer decodes
    the single reports of a group in one vectorised call before its transaction
    (:func:`decode_singles`), and answers one that does not decode with ``rejected``
    (its reason) without writing it.
    """

    collection: StoredCollection
    ids: list[str]
    matrix: NDArray[np.uint8]
    delta: Stats | None
    day: date
    period_start: int
    stored_before: set[str] = field(default_factory=set)
    error: BaseException | None = None
    rejected: str | None = None
    done: bool = False
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[None] | None = None


class _SkippedIdsError(Exception):
    """Some ids of a blind insert were stored already: write the group again, looking."""


class ReportWriter:
    """Writes reports for every request of an app (see the module docstring)."""

    def __init__(self, engine: Engine, on_commit: Callable[[int], None] | None = None) -> None:
        self.engine = engine
        self.on_commit = on_commit
        """Called with the number of requests of every committed transaction (metrics)."""
        self.transactions = 0
        """Transactions committed so far (groups, not requests)."""
        self.written_since_rewrite = 0
        """Reports this writer wrote since its last rewrite."""
        self._rewritten = False
        self._cond = threading.Condition()
        self._queue: list[Pending] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._writing = threading.Lock()  # one transaction or rewrite at a time
        self._wal = WalTruncator(engine)
        self._kept = KeptConnection(engine)  # no pool ping per transaction on a server
        self._periods: set[tuple[int, int]] = set()
        """(collection id, period start) of the periods whose statistics rows exist."""

    def store(self, pending: Pending) -> set[str]:
        """Write ``pending`` in the next transaction; returns its ids that were stored
        already. Returns only after that transaction committed (or raises its error)."""
        self._submit(pending)
        with self._cond:
            while not pending.done:
                self._cond.wait()
        return _outcome(pending)

    async def store_async(self, pending: Pending) -> set[str]:
        """:meth:`store` for a coroutine: waits in its event loop, not in a thread."""
        pending.loop = asyncio.get_running_loop()
        pending.future = pending.loop.create_future()
        self._submit(pending)
        await pending.future
        return _outcome(pending)

    def write_now(self, pending: Pending) -> set[str]:
        """Write ``pending`` in a transaction of its own, in the calling thread (for a
        caller without an app, such as a script or a test)."""
        with self._writing:
            self._write(decode_singles([pending]))
            self._truncate_wal()
        pending.done = True
        return _outcome(pending)

    def write_together(self, group: list[Pending]) -> None:
        """Write ``group`` in one transaction, in the calling thread (a fold worker's
        batch, ``ldpcollect fold``); each member gets its ``stored_before`` or its
        ``error``, as in :meth:`store`, without raising it."""
        with self._writing:
            self._write(decode_singles(group))
            self._truncate_wal()
        for pending in group:
            pending.done = True

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
        with self._writing:
            if not rewrite_reports(self.engine):
                return False
            self.written_since_rewrite = 0
            self._rewritten = True
            return True

    def close(self) -> None:
        """Write what is queued, stop the thread and close the log's connection."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        with self._writing:
            self._kept.close()
        self._wal.close()

    def _submit(self, pending: Pending) -> None:
        with self._cond:
            if self._closed:
                raise RuntimeError("the report writer is closed")
            self._queue.append(pending)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ldp-writer", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                group, self._queue = self._queue, []
            answered = False
            try:
                valid = decode_singles(group)
                with self._writing:
                    self._write(valid)
                    # answered once committed; the log is truncated next, with the writer
                    # still busy (so it never holds two transactions), while the answered
                    # requests' next ones arrive and parse
                    self._answer(group)
                    answered = True
                    if valid:
                        self._truncate_wal()
            except BaseException as error:  # a bug: answer the group rather than hang it
                logger.exception("the report writer failed")
                if not answered:
                    for pending in group:
                        pending.error = pending.error or error
                    self._answer(group)

    def wait_idle(self) -> None:
        """Return once no transaction (nor the log's truncation after it) is in progress."""
        with self._writing:
            pass

    def _truncate_wal(self) -> None:
        try:
            self._wal.truncate()
        except Exception:  # the transaction committed: its requests must not fail now
            logger.exception("the write-ahead log was not truncated")

    def _write(self, group: list[Pending]) -> None:
        if not group:
            return
        try:
            befores = self._commit_retrying(group)
        except Exception as error:
            if len(group) > 1:  # find the culprit: every request on its own
                for pending in group:
                    self._write([pending])
                return
            befores = None
            group[0].error = error
        if befores is not None:
            for pending, before in zip(group, befores, strict=True):
                pending.stored_before = before

    def _answer(self, group: list[Pending]) -> None:
        with self._cond:
            for pending in group:
                pending.done = True
            self._cond.notify_all()
        waiting: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = defaultdict(list)
        for pending in group:
            if pending.loop is not None and pending.future is not None:
                waiting[pending.loop].append(pending.future)
        for loop, futures in waiting.items():  # one wake-up per event loop
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, futures)

    def _commit_retrying(self, group: list[Pending]) -> list[set[str]]:
        reconnected = False
        for attempt in range(ATTEMPTS):
            try:
                return self._commit(group, look_up=attempt > 0)
            except _SkippedIdsError:
                continue
            except DBAPIError as error:
                # the server dropped the kept connection (a restart, an idle timeout):
                # once more on a new one, looking up the ids, since a commit whose answer
                # was lost may have stored them
                if reconnected or not error.connection_invalidated:
                    raise
                reconnected = True
        raise RuntimeError(f"stored ids were still skipped after {ATTEMPTS} attempts")

    def _commit(self, group: list[Pending], *, look_up: bool) -> list[set[str]]:
        """One transaction for the whole group; the ids stored before, per request. A
        request whose collection is closed or deleted gets its ``error`` and writes nothing.
        Without ``look_up`` nothing is read before the insert (raises :class:`_SkippedIdsError`,
        rolling back, when an id turns out stored)."""
        members: dict[tuple[int, str, int], list[int]] = defaultdict(list)
        for k, pending in enumerate(group):
            pending.error = None
            collection = pending.collection
            members[collection.id, collection.config.config_hash, pending.period_start].append(k)
        befores: list[set[str]] = [set() for _ in group]
        written = 0
        with self._kept.transaction() as connection:
            for key in sorted(members):  # one lock order for every writer
                part = [group[k] for k in members[key]]
                claimed, refusal = _lock(
                    connection, part[0].collection, part[0].period_start, self._periods
                )
                if refusal is not None or claimed is None:
                    for pending in part:
                        pending.error = refusal or gone(pending.collection)
                    continue
                seen, fresh = _store_collection(connection, part, claimed, look_up=look_up)
                for k, before in zip(members[key], seen, strict=True):
                    befores[k] = before
                written += fresh
        self.transactions += 1
        self.written_since_rewrite += written
        if self.on_commit is not None:
            self.on_commit(len(group))
        return befores


def decode_singles(group: list[Pending]) -> list[Pending]:
    """Decode the undecoded single reports of ``group`` (``delta`` ``None``), one call per
    collection config for all of them; the members left to write, in order. A report
    that does not decode gets its reason in ``rejected`` and is not written."""
    singles: dict[str, list[Pending]] = defaultdict(list)
    for pending in group:
        if pending.delta is None:
            if len(pending.ids) != 1:
                raise ValueError("only a single report may be left undecoded")
            singles[pending.collection.config.config_hash].append(pending)
    if not singles:
        return group
    for members in singles.values():
        config = members[0].collection.config
        decoded = decode_reports(config, np.concatenate([p.matrix for p in members]))
        for pending, valid, reason in zip(members, decoded.valid, decoded.reasons, strict=True):
            if not valid:
                pending.rejected = reason or "not a report of this collection"
    return [pending for pending in group if pending.rejected is None]


def _settle(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():  # a cancelled request no longer waits
            future.set_result(None)


def _outcome(pending: Pending) -> set[str]:
    if pending.error is not None:
        raise pending.error
    return pending.stored_before


def _lock(
    connection: Connection,
    collection: StoredCollection,
    period_start: int,
    periods: set[tuple[int, int]],
) -> tuple[ClaimedShard | None, LDPError | None]:
    """Lock ``collection`` against closing and deleting and claim a statistics shard of
    the period ``period_start``, in
    the order the engine needs (SQLite: a write first, see
    :func:`~ldp_aggregator.storage.stats.claim_shard`); and why nothing may be written.
    ``periods`` are the periods whose rows this writer found already: PostgreSQL's
    :func:`~ldp_aggregator.storage.stats.prepare_period` is skipped for them (rows
    deleted since, by retention, are created by the claim itself)."""
    config = collection.config
    lengths = (config.stats_length, config.float_stats_length)
    if connection.dialect.name == "sqlite":
        claimed = claim_shard(connection, collection.id, period_start, *lengths)
        if claimed is None:
            return None, gone(collection)
        return claimed, refusal_to_write(connection, collection)
    key = (collection.id, period_start)
    if key not in periods:
        prepare_period(connection, collection.id, period_start)  # before any lock, see there
    refusal = refusal_to_write(connection, collection)
    if refusal is not None:
        return None, refusal
    claimed = claim_shard(connection, collection.id, period_start, *lengths)
    if claimed is not None:
        if len(periods) >= _PERIODS_KEPT:
            periods.clear()
        periods.add(key)
    return claimed, None


_PERIODS_KEPT = 4096


def _store_collection(
    connection: Connection, part: list[Pending], claimed: ClaimedShard, *, look_up: bool
) -> tuple[list[set[str]], int]:
    """Insert the new reports of requests of one collection, in key order, and add their
    statistics to the claimed shard; the ids each request found stored, and how many
    reports were written."""
    collection = part[0].collection
    taken = (
        existing_ids(connection, collection.id, [i for p in part for i in p.ids])
        if look_up
        else set()
    )
    rows: dict[date, list[tuple[str, bytes]]] = defaultdict(list)
    candidates: list[list[int]] = []
    for pending in part:  # an id sent twice in the group is written by its first request
        fresh = [k for k, report_id in enumerate(pending.ids) if report_id not in taken]
        taken.update(pending.ids)
        candidates.append(fresh)
        rows[pending.day].extend((pending.ids[k], pending.matrix[k].tobytes()) for k in fresh)
    stored = _insert(connection, collection.id, rows, part[0].period_start)
    befores: list[set[str]] = []
    deltas: list[Stats] = []
    to_decode: list[NDArray[np.uint8]] = []  # valid rows whose statistics are not known
    for pending, fresh in zip(part, candidates, strict=True):
        if stored is not None:  # some ids were stored by another transaction meanwhile
            fresh = [k for k in fresh if pending.ids[k] in stored]
        written = {pending.ids[k] for k in fresh}
        befores.append({report_id for report_id in pending.ids if report_id not in written})
        if len(fresh) == len(pending.ids) and pending.delta is not None:
            deltas.append(pending.delta)
        elif fresh:
            to_decode.append(pending.matrix[fresh])
    if to_decode:  # one vectorised call for all of them
        deltas.append(statistics_of(collection.config, np.concatenate(to_decode)))
    if deltas:
        total = deltas[0] if len(deltas) == 1 else sum_stats(deltas)
        add_to_shard(connection, collection.id, claimed, total)
    return befores, sum(delta.n_reports for delta in deltas)


def _insert(
    connection: Connection,
    collection_id: int,
    rows: dict[date, list[tuple[str, bytes]]],
    period_start: int,
) -> set[str] | None:
    """Insert the rows of every day (of period ``period_start``) in key order, skipping
    stored ids; ``None`` when all
    were inserted, else the ids that were. PostgreSQL answers which ids it stored.
    SQLite only counts them; but this transaction holds its one write lock, so a short
    count means ids stored before it began: it raises :class:`_SkippedIdsError`, and the
    transaction is written again with the stored ids looked up first."""
    expected = sum(len(day_rows) for day_rows in rows.values())
    if connection.dialect.name == "postgresql":
        stored: set[str] = set()
        for day in sorted(rows):
            stored |= insert_reports_returning(
                connection, collection_id, sorted(rows[day]), day, period_start
            )
        return None if len(stored) == expected else stored
    count = sum(
        insert_reports(connection, collection_id, sorted(rows[day]), day, period_start)
        for day in sorted(rows)
    )
    if count != expected:
        raise _SkippedIdsError(f"{expected - count} of {expected} ids were stored already")
    return None
