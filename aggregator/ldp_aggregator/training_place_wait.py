"""A device's request for a place, waiting for the open round to close.

While every place of a job's open round is held by devices that will answer, a further
request does not answer 429 at once: it waits in the event loop (no worker thread held)
until the round closes in this process (:class:`RoundSignals`, notified by the report that
closes it, :func:`ldp_aggregator.training_rounds.accept_report`), asking again at least
every :data:`POLL_SECONDS` (a round closed by another replica wakes no request here), and
is given a place of the next round; after :data:`PLACE_WAIT_SECONDS` it is answered 429.
See ``docs/training-jobs.md``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

from ldp_shared.errors import RateLimitedError

__all__ = [
    "PLACE_WAIT_SECONDS",
    "POLL_SECONDS",
    "RoundSignals",
    "round_signals",
    "wait_for_place",
]

PLACE_WAIT_SECONDS = 5.0
"""How long a request for a place waits, while every place of the open round is held,
for the round to close (:func:`wait_for_place`) before it is answered 429: at a round
boundary an honest device is given a place of the next round as soon as it opens,
without a second's ``Retry-After``."""

POLL_SECONDS = 0.25
"""While it waits, a request asks again at least this often: a round closed by another
replica, or a place freed when its hold ended, wakes no request of this process."""


class RoundSignals:
    """Wakes this process's requests waiting for a place once a job's round closes.

    :meth:`wait` returns when :meth:`notify` was called for the job since ``seen``
    (:meth:`generation`, read before the request looked for a place) or after
    ``timeout`` seconds. ``notify`` is called from a worker thread, the waiters wait on
    the event loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation: dict[str, int] = {}
        self._full: dict[str, tuple[int, float]] = {}
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    def generation(self, job_id: str) -> int:
        with self._lock:
            return self._generation.get(job_id, 0)

    def mark_full(self, job_id: str, seen: int, seconds: float) -> None:
        """Every place of the job's open round was held at generation ``seen``: for the
        next ``seconds``, or until :meth:`notify`, :meth:`known_full` says so."""
        with self._lock:
            if self._generation.get(job_id, 0) == seen:
                self._full[job_id] = (seen, time.monotonic() + seconds)

    def known_full(self, job_id: str, seen: int) -> bool:
        """Whether a request that read generation ``seen`` may wait for the round to
        close without asking first (:meth:`mark_full` since, and not expired)."""
        with self._lock:
            found = self._full.get(job_id)
            if found is None:
                return False
            if found[0] != seen or time.monotonic() >= found[1]:
                del self._full[job_id]
                return False
            return True

    def notify(self, job_id: str, *, finished: bool = False) -> None:
        """Round closed, or a place given back (``finished``: the job's last round
        closed; its entry is dropped): the job's waiting requests ask again."""
        with self._lock:
            self._full.pop(job_id, None)
            if finished:
                self._generation.pop(job_id, None)
            else:
                self._generation[job_id] = self._generation.get(job_id, 0) + 1
            waiters = self._waiters.pop(job_id, [])
        for loop, future in waiters:
            loop.call_soon_threadsafe(_wake, future)

    async def wait(self, job_id: str, seen: int, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._lock:
            if self._generation.get(job_id, 0) != seen:
                return
            self._waiters.setdefault(job_id, []).append(entry)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                waiting = self._waiters.get(job_id)
                if waiting is not None and entry in waiting:
                    waiting.remove(entry)
                    if not waiting:
                        del self._waiters[job_id]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


round_signals = RoundSignals()
"""This process's signals (module state: a job's id is random, so apps never share one)."""


async def wait_for_place(
    issue: Callable[[], Awaitable[bytes]], job_id: str, *, wait_seconds: float | None = None
) -> bytes:
    """``await issue()`` (:func:`~ldp_aggregator.training_rounds.issue_in` for ``job_id``,
    run by the app's :class:`~ldp_aggregator.training_commit.TrainingCommitter`);
    while every place is held (its :class:`RateLimitedError`), called again when the
    job's round closes in this process (:data:`round_signals`), at least every
    :data:`POLL_SECONDS`, for up to ``wait_seconds`` (:data:`PLACE_WAIT_SECONDS`); then
    the 429 is raised. No worker thread is held while it waits.

    A request that comes while this process has just been told the round is full (a
    refusal less than :data:`POLL_SECONDS` ago, no close or give-back since) waits for
    the close first instead of asking: at a round boundary the devices that come back
    for a place would otherwise each cost a transaction that only says "full". It asks
    at least every :data:`POLL_SECONDS` all the same, and always once at its deadline.
    """
    budget = PLACE_WAIT_SECONDS if wait_seconds is None else wait_seconds
    deadline = time.monotonic() + budget
    while True:
        seen = round_signals.generation(job_id)
        left = deadline - time.monotonic()
        if left <= 0 or not round_signals.known_full(job_id, seen):
            try:
                return await issue()
            except RateLimitedError:  # the only one it raises: every place is held
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                round_signals.mark_full(job_id, seen, POLL_SECONDS)
        await round_signals.wait(job_id, seen, min(left, POLL_SECONDS))
