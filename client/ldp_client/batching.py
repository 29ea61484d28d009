"""Splitting reports into batches and adding up the answers (pure, shared by both clients).

:class:`BatchPlan` hands out batches of at most ``batch_size`` reports, halves a batch
the aggregator found too large (HTTP 413), and merges the per-batch results into one
:class:`~ldp_shared.wire.reports.BatchResult`. :func:`summarize` turns that into the
:class:`SubmitSummary` that ``submit`` returns, :func:`rejection_error` into the
:class:`~ldp_shared.errors.ReportRejectedError` it raises when any report was refused;
:func:`submit_summary` does both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ldp_shared.errors import ConfigurationError, LDPError, ReportRejectedError
from ldp_shared.wire.reports import MAX_BATCH, BatchResult, Report, ReportOutcome

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "BatchPlan",
    "SubmitSummary",
    "check_batch_size",
    "rejection_error",
    "submit_summary",
    "summarize",
]

DEFAULT_BATCH_SIZE = 1000


@dataclass(frozen=True)
class SubmitSummary:
    """What the aggregator did with the reports of one ``submit``.

    ``duplicate`` counts reports whose id the aggregator had stored already: with the
    fresh random ids ``submit`` uses, that happens only when a batch was resent after a
    lost answer, and such a report counts once.
    """

    accepted: int
    duplicate: int
    rejected: int
    rejected_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """All reports the aggregator answered for."""
        return self.accepted + self.duplicate + self.rejected


def check_batch_size(batch_size: int) -> int:
    """``batch_size`` if it is an integer in ``[1, MAX_BATCH]``."""
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int)
        or not 1 <= batch_size <= MAX_BATCH
    ):
        raise ConfigurationError(
            f"batch_size must be an integer in [1, {MAX_BATCH}], got {batch_size!r}"
        )
    return batch_size


class BatchPlan:
    """The batches still to send and the outcomes of those sent, in the reports' order."""

    def __init__(self, reports: Sequence[Report], batch_size: int) -> None:
        size = check_batch_size(batch_size)
        self.total = len(reports)
        # slices, not lists: a ReportColumns slice stays columns (its body is built at once)
        self._pending: deque[Sequence[Report]] = deque(
            reports[start : start + size] for start in range(0, len(reports), size)
        )
        self._outcomes: list[ReportOutcome] = []

    @property
    def sent(self) -> int:
        """Reports the aggregator has answered for so far."""
        return len(self._outcomes)

    def next_batch(self) -> Sequence[Report] | None:
        """The next batch to send, or ``None`` when all were answered."""
        return self._pending.popleft() if self._pending else None

    def record(self, batch: Sequence[Report], result: BatchResult) -> None:
        """Keep the answer to ``batch`` (checked by the protocol to match it)."""
        self._outcomes.extend(result.outcomes)

    def too_large(self, batch: Sequence[Report], error: LDPError) -> None:
        """Resend ``batch`` as two halves; re-raise ``error`` if it holds one report."""
        if len(batch) <= 1:
            self.annotate(error)
            raise error
        half = len(batch) // 2
        self._pending.appendleft(batch[half:])
        self._pending.appendleft(batch[:half])

    def annotate(self, error: BaseException) -> None:
        """Say, on an error that ends the upload, how far it got and how to resume."""
        error.add_note(
            f"{self.sent} of {self.total} reports were answered before this failure; resend "
            "the same Report objects with submit_reports (their ids make a resend count once) "
            "rather than privatizing the records again, which would spend their ε twice"
        )

    def result(self) -> BatchResult:
        """All answers merged into one :class:`BatchResult`."""
        return merge_outcomes(self._outcomes)


def merge_outcomes(outcomes: Sequence[ReportOutcome]) -> BatchResult:
    """One :class:`BatchResult` over the outcomes of several batches."""
    statuses = [outcome.status for outcome in outcomes]
    return BatchResult(
        accepted=statuses.count("accepted"),
        duplicate=statuses.count("duplicate"),
        rejected=statuses.count("rejected"),
        outcomes=list(outcomes),
    )


def summarize(result: BatchResult) -> SubmitSummary:
    """The counts of a result and the reason of every rejected report, by id."""
    reasons = {
        outcome.id: outcome.reason or "rejected (no reason given)"
        for outcome in result.outcomes
        if outcome.status == "rejected"
    }
    return SubmitSummary(
        accepted=result.accepted,
        duplicate=result.duplicate,
        rejected=result.rejected,
        rejected_reasons=reasons,
    )


def rejection_error(summary: SubmitSummary) -> ReportRejectedError | None:
    """The error ``submit`` raises when any report was rejected (``None`` otherwise)."""
    if not summary.rejected:
        return None
    first_id, first_reason = next(iter(summary.rejected_reasons.items()))
    error = ReportRejectedError(
        f"the aggregator rejected {summary.rejected} of {summary.total} reports"
        f" (e.g. {first_id}: {first_reason})",
        summary.rejected_reasons,
    )
    error.add_note(
        f"accepted {summary.accepted}, duplicate {summary.duplicate}, rejected {summary.rejected}"
    )
    return error


def submit_summary(result: BatchResult) -> SubmitSummary:
    """What ``submit`` returns for ``result``, or the :func:`rejection_error` it raises."""
    summary = summarize(result)
    error = rejection_error(summary)
    if error is not None:
        raise error
    return summary
