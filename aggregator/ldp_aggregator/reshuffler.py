"""The app's periodic turn over its stored reports: fold what is past its retention, then
rewrite the tables out of arrival order (docs/privacy-at-rest.md)."""

from __future__ import annotations

import logging
import threading

from sqlalchemy.exc import SQLAlchemyError

from ldp_aggregator.storage.retention import fold_expired
from ldp_aggregator.writer import ReportWriter

logger = logging.getLogger("ldp_aggregator")


class Reshuffler:
    """Rewrites the reports when :attr:`ReportWriter.needs_rewrite`, in a thread of its
    own: at once when started (a process killed earlier, by ``kill -9`` or a power cut,
    may have left arrival order in the files), then every ``seconds``, and once more when
    stopped; folds expired reports
    (:func:`~ldp_aggregator.storage.retention.fold_expired`) on each turn. With
    ``seconds`` 0 there is no thread: only the turn when stopped."""

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
        """Stop the thread and the writer (which writes what is queued), then rewrite once
        more if needed (the files at rest keep no order after a clean shutdown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.writer.close()
        self._turn()

    def _run(self) -> None:
        self._turn()  # the first turn at start-up, not after one interval
        while not self._stop.wait(self.seconds):
            self._turn()

    def _turn(self) -> None:
        try:
            # the rewrite then drops the old row versions, bits and all (PostgreSQL)
            self.writer.written_since_rewrite += fold_expired(self.writer.engine)
        except Exception as error:  # logged; the next turn tries again
            _log_failure("folding expired reports", error)
        if not self.writer.needs_rewrite:
            return
        try:
            self.writer.rewrite()
        except Exception as error:  # logged; the next turn tries again
            _log_failure("rewriting the reports", error)


def _log_failure(what: str, error: Exception) -> None:
    """One line when the database failed the turn (unreachable, or its schema not yet
    migrated: ``/readyz`` says which), the traceback of anything else."""
    if isinstance(error, SQLAlchemyError):
        logger.warning("%s failed: %s; the next turn tries again", what, type(error).__name__)
    else:
        logger.error("%s failed", what, exc_info=error)
