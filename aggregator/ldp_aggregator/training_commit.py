"""Group commit for the devices' requests of training jobs: many places, reports and
give-backs per transaction.

A device's place (``POST .../participations``), report (``PUT``) and give-back
(``DELETE``) are each a short transaction: lock the job's round row, a few reads, one to
three writes. Committed one by one they cost a commit (on SQLite an ``fsync`` of the
write-ahead log) and a hop to a worker thread each, more than the work itself. The
:class:`TrainingCommitter` of an app runs them on one thread instead: the requests that
arrive while it commits a group wait, and the next transaction runs all of them, each
answered only after that transaction has committed (an answered place or report is
durable, as before).

What a group may hold, and why:

* **One kind per transaction.** Places and give-backs (``ISSUE``: rows that hold the end
  of a hold, or a dead version of one) are never committed with reports (``REPORT``):
  on PostgreSQL every row a transaction writes carries its ``xmin``, and a report must
  not share it with a token row that holds a time (``docs/training-jobs.md``, "What ties
  a report to the time its place was issued"). Reports of one group share one ``xmin``
  with each other, which tells less of the order they came in than one each.
* **Refusals write nothing.** Each request's function reads and checks first and writes
  last, so a request refused with an :class:`~ldp_shared.errors.LDPError` (a full round,
  a used token, a bad report) leaves the transaction as it found it and the others of
  its group go on. Any other failure rolls the whole group back, and its requests are
  then run again one transaction each, so one bad request cannot fail the others.
* **One lock order.** A group's requests run in the order of their job ids, so two
  replicas' groups on one PostgreSQL database take the jobs' round rows in the same
  order (a deadlock would only cost the retry above).

The thread is started on the first request and ends after :data:`IDLE_SECONDS` without
one; the next request starts it again. See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from ldp_aggregator.storage.engine import KeptConnection
from ldp_shared.errors import LDPError

__all__ = ["IDLE_SECONDS", "ISSUE", "MAX_GROUP", "REPORT", "Kind", "TrainingCommitter"]

T = TypeVar("T")
Kind = Literal["issue", "report"]

ISSUE: Kind = "issue"
"""Places and give-backs: what writes (or deletes) a token row that holds a time."""
REPORT: Kind = "report"
"""Reports (and the round closes they cause): rows that hold no time."""

MAX_GROUP = 64
"""The most requests one transaction runs."""

IDLE_SECONDS = 2.0
"""The thread ends after this long without a request (an app that no device speaks to
keeps no thread)."""

logger = logging.getLogger("ldp_aggregator")


@dataclass
class _Work:
    kind: Kind
    job_id: str
    run: Callable[[Connection], Any]
    after: Callable[[Any], None] | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    outcome: tuple[bool, Any] = field(default=(False, None))


class TrainingCommitter:
    """Runs device requests' transactions of one app's training jobs, many per commit."""

    def __init__(self, engine: Engine, *, max_group: int = MAX_GROUP) -> None:
        self.engine = engine
        self._kept = KeptConnection(engine)  # the thread's own, between its transactions
        self._max_group = max_group
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()  # None: stop
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.groups = 0
        """Transactions committed so far (a test reads it)."""

    async def run(
        self,
        kind: Kind,
        job_id: str,
        run: Callable[[Connection], T],
        after: Callable[[T], None] | None = None,
    ) -> T:
        """``run(connection)`` in the next group transaction of ``kind`` for ``job_id``;
        its value once that transaction has committed (its error if it was refused).
        ``after(value)`` runs on the committer's thread after the commit (waking the
        requests that wait for a place, emptying SQLite's log after a round closed)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(_Work(kind, job_id, run, after, loop, future))
        self._ensure_thread()
        value: T = await future
        return value

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="ldp-training-commit", daemon=True
                )
                self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread once it has run what is queued, and give its connection back
        (the app's shutdown: a connection kept open would outlive the engine)."""
        with self._lock:
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            self._queue.put(None)
        thread.join(timeout)

    def _serve(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                first = None
            if first is None:  # idle, or told to stop
                with self._lock:
                    if self._queue.empty():  # a request put after the timeout is served
                        self._thread = None
                        self._kept.close()
                        return
                continue
            group = [first]
            while len(group) < self._max_group:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:  # told to stop: after this group
                    self._queue.put(None)
                    break
                group.append(more)
            for kind in (ISSUE, REPORT):
                same = sorted((w for w in group if w.kind == kind), key=lambda w: w.job_id)
                if same:
                    self._commit(same)

    def _commit(self, group: list[_Work], *, reconnected: bool = False) -> None:
        try:
            with self._kept.transaction() as connection:
                for work in group:
                    work.outcome = _attempt(work, connection)
        except Exception as error:
            if isinstance(error, DBAPIError) and error.connection_invalidated and not reconnected:
                # the server dropped the kept connection (a restart, an idle timeout; the
                # pool would have pinged it): the group once more on a new one, as the
                # report writer does
                self._commit(group, reconnected=True)
                return
            if len(group) > 1:  # one request's failure: each again on its own
                for work in group:
                    self._commit([work])
                return
            group[0].outcome = (False, error)
        else:
            self.groups += 1
        for work in group:
            ok, value = work.outcome
            if ok and work.after is not None:
                try:
                    work.after(value)
                except Exception:  # committed: its device must not see a failure
                    logger.exception("a training request's step after its commit failed")
            try:
                work.loop.call_soon_threadsafe(_settle, work.future, work.outcome)
            except RuntimeError:  # its event loop is closed: nobody waits for the answer
                logger.warning("a training request's event loop closed before its answer")


def _attempt(work: _Work, connection: Connection) -> tuple[bool, Any]:
    """Run one request in the group's transaction: its value, or its refusal (which
    wrote nothing). Any other error propagates and rolls the group back."""
    try:
        return True, work.run(connection)
    except LDPError as refusal:
        return False, refusal


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # its request was cancelled (the client went away)
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
