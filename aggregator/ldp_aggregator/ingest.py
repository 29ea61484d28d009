"""Ingestion of a batch of reports: judge each report, store the good ones, update the stats.

Per report, in order (the first failure is the reason given):

1. the id matches :data:`~ldp_shared.wire.reports.REPORT_ID_PATTERN`;
2. the config hash is the collection's;
3. the bits are strict base64 of exactly ``config.report_bytes`` bytes;
4. :func:`~ldp_shared.codec.decode_reports` finds no padding bit set and no index
   outside its domain (vectorised over the whole batch).

A valid report is a ``duplicate`` when its id is stored already for the collection or
was taken by an earlier valid report of the same batch (or of a request committed in
the same transaction), so a retried batch counts once. The new reports and the
statistics they add are written in one transaction, which concurrent requests may share
(:class:`~ldp_aggregator.writer.ReportWriter`); the answer comes after its commit.

A batch of one report (a device's upload, issue 23) is judged the same way, but step 4
runs in the writer, for all the single reports of a transaction in one vectorised call
(:func:`~ldp_aggregator.writer.decode_singles`); the outcomes are the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from anyio import to_thread
from numpy.typing import NDArray
from pydantic_core import to_json
from sqlalchemy import Engine

from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.storage.lifecycle import check_takes_reports
from ldp_aggregator.storage.stats import Stats, delta_of, statistics_of
from ldp_aggregator.writer import Pending, ReportWriter
from ldp_shared.codec import decode_reports
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import InvalidReportError
from ldp_shared.periods import stamp
from ldp_shared.wire.reports import (
    REPORT_ID_PATTERN,
    BatchResult,
    ReportBatch,
    ReportRows,
    decode_bits,
    decode_bits_column,
    ids_match_pattern,
)

_REPORT_ID = re.compile(REPORT_ID_PATTERN)

REASON_BAD_ID = f"report id does not match {REPORT_ID_PATTERN}"
REASON_OTHER_CONFIG = "config hash of another config (fetch the collection's config again)"
REASON_NOT_BASE64 = "bits are not valid base64"


@dataclass(frozen=True)
class JudgedBatch:
    """The verdict on every report of a batch before anything is stored.

    ``reasons[i]`` is why report ``i`` is rejected (``None``: valid). ``candidates``
    are the positions of the valid reports whose id is new within the batch, in
    batch order; ``matrix`` holds their packed bits (one row each) and ``delta`` the
    statistics they add; ``batch_duplicates`` are positions of valid repeats within the batch.
    """

    reasons: list[str | None]
    candidates: list[int]
    matrix: NDArray[np.uint8]
    delta: Stats
    batch_duplicates: set[int]


def judge_batch(config: CollectionConfig, batch: ReportBatch) -> JudgedBatch:
    """Check every report of ``batch`` against ``config`` (pure: no database)."""
    ids = batch.rows.ids
    reasons, positions, matrix = _check_fields(config, batch.rows)
    decoded = decode_reports(config, matrix)
    for bad in np.flatnonzero(~decoded.valid).tolist():
        reasons[positions[bad]] = decoded.reasons[bad]

    if len(positions) == len(ids) and decoded.valid.all() and len(set(ids)) == len(ids):
        # every report valid and new within the batch: the usual batch, judged whole
        return JudgedBatch(reasons, positions, matrix, delta_of(decoded), set())
    candidates: list[int] = []
    rows: list[int] = []
    batch_duplicates: set[int] = set()
    seen: set[str] = set()
    valid = decoded.valid.tolist()
    for row, position in enumerate(positions):
        if not valid[row]:
            continue
        report_id = ids[position]
        if report_id in seen:
            batch_duplicates.add(position)
            continue
        seen.add(report_id)
        candidates.append(position)
        rows.append(row)

    if len(rows) == len(positions):
        kept, delta = matrix, delta_of(decoded)
    else:
        kept = matrix[rows]
        delta = statistics_of(config, kept)
    return JudgedBatch(
        reasons=reasons,
        candidates=candidates,
        matrix=kept,
        delta=delta,
        batch_duplicates=batch_duplicates,
    )


COLUMN_CHECKS_FROM = 32
"""Reports from which a batch is checked column by column: the column checks cost about
25 µs whatever the batch's size (a score of small numpy calls), the per-report loop
about 1.5 µs a report, so they break even near 30 reports."""


def _check_fields(
    config: CollectionConfig, rows: ReportRows
) -> tuple[list[str | None], list[int], NDArray[np.uint8]]:
    """Checks 1 to 3 of the module docstring: the reason of every report that fails one
    (``None``: passed), the positions of those that pass and their packed bits (one row
    each). A batch of at least :data:`COLUMN_CHECKS_FROM` reports that all pass is
    checked column by column, in a few passes over the whole batch; a smaller one, or
    one that holds a failure, report by report (the latter for the reasons)."""
    expected = config.report_bytes
    config_hash = config.config_hash
    n = len(rows)
    if (
        n >= COLUMN_CHECKS_FROM
        and rows.config_hashes.count(config_hash) == n
        and ids_match_pattern(rows.ids)
    ):
        matrix = decode_bits_column(rows.bits, expected)
        if matrix is not None:
            return [None] * n, list(range(n)), matrix
    reasons: list[str | None] = [None] * n
    positions: list[int] = []
    payloads: list[bytes] = []
    for position, (report_id, report_hash, bits) in enumerate(
        zip(rows.ids, rows.config_hashes, rows.bits, strict=True)
    ):
        if _REPORT_ID.fullmatch(report_id) is None:
            reasons[position] = REASON_BAD_ID
            continue
        if report_hash != config_hash:
            reasons[position] = REASON_OTHER_CONFIG
            continue
        try:
            packed = decode_bits(bits)
        except InvalidReportError:
            reasons[position] = REASON_NOT_BASE64
            continue
        if len(packed) != expected:
            reasons[position] = f"wrong length: {len(packed)} bytes, expected {expected}"
            continue
        positions.append(position)
        payloads.append(packed)
    matrix = np.frombuffer(b"".join(payloads), dtype=np.uint8).reshape(len(payloads), expected)
    return reasons, positions, matrix


INLINE_BATCH = 64
"""Batches up to this size are judged in the event loop by :func:`ingest_batch_async`
(a few microseconds a report); larger ones in a worker thread, so that the loop stays
free for other requests."""


def ingest_batch(
    engine: Engine,
    collection: StoredCollection,
    batch: ReportBatch,
    *,
    at: datetime | None = None,
    writer: ReportWriter | None = None,
) -> BatchResult:
    """Judge ``batch``, store its new valid reports and add their statistics atomically.

    Returns one outcome per report, in order, once they are committed. Raises
    :class:`~ldp_shared.errors.CollectionClosedError` (nothing stored) when an admin
    closed the collection, and :class:`~ldp_shared.errors.CollectionNotFoundError` when it
    was deleted since ``collection`` was loaded. A report is counted in the period of the
    collection that contains ``at``, the instant of acceptance (default now), and only
    that period and its day are stored with it (:func:`ldp_shared.periods.stamp`). ``writer`` is the
    app's, shared by its requests so that concurrent requests share transactions;
    without one, the batch gets a transaction of its own in the calling thread.
    """
    judged, pending = _prepare(collection, batch, at)
    if pending is None:  # answered as if it wrote: 409/404 when it could not have
        check_takes_reports(engine, collection)
        return _result(batch, judged, set()).to_model()
    if writer is None:
        alone = ReportWriter(engine)
        try:
            return _result(batch, judged, alone.write_now(pending)).to_model()
        finally:
            alone.close()  # its connection for the log
    return _result(batch, judged, writer.store(pending)).to_model()


async def ingest_batch_async(
    writer: ReportWriter, collection: StoredCollection, batch: ReportBatch
) -> BatchOutcomes:
    """:func:`ingest_batch` with the app's writer, for a request handler in an event loop:
    it waits for the commit without holding a thread, and answers with the outcomes ready
    to serialise."""
    if len(batch.reports) == 1:
        return await _ingest_single(writer, collection, batch)
    if len(batch.reports) <= INLINE_BATCH:
        judged, pending = _prepare(collection, batch, None)
    else:
        judged, pending = await to_thread.run_sync(_prepare, collection, batch, None)
    if pending is None:
        await to_thread.run_sync(check_takes_reports, writer.engine, collection)
        return _result(batch, judged, set())
    return _result(batch, judged, await writer.store_async(pending))


async def _ingest_single(
    writer: ReportWriter, collection: StoredCollection, batch: ReportBatch
) -> BatchOutcomes:
    """One report (a device's upload): checks 1 to 3 here, check 4 (decoding) by the
    writer for every single report of its next transaction in one vectorised call
    (:func:`~ldp_aggregator.writer.decode_singles`); the same outcomes as
    :func:`judge_batch` then storing."""
    config = collection.config
    report_id = batch.rows.ids[0]
    reasons, _, matrix = _check_fields(config, batch.rows)
    reason = reasons[0]
    if reason is None:
        day, period_start = stamp(config.spec.period, None)
        pending = Pending(
            collection=collection,
            ids=[report_id],
            matrix=matrix,
            delta=None,
            day=day,
            period_start=period_start,
        )
        stored_before = await writer.store_async(pending)
        if pending.rejected is None:
            status = "duplicate" if report_id in stored_before else "accepted"
            return BatchOutcomes(
                int(status == "accepted"),
                int(status == "duplicate"),
                0,
                [report_id],
                [status],
                [None],
            )
        reason = pending.rejected
    # answered as if it wrote: 409/404 when it could not have
    await to_thread.run_sync(check_takes_reports, writer.engine, collection)
    return BatchOutcomes(0, 0, 1, [report_id], ["rejected"], [reason])


def _prepare(
    collection: StoredCollection, batch: ReportBatch, at: datetime | None
) -> tuple[JudgedBatch, Pending | None]:
    """The verdict on ``batch`` and what the writer must store (``None``: nothing)."""
    judged = judge_batch(collection.config, batch)
    if not judged.candidates:
        return judged, None
    day, period_start = stamp(collection.config.spec.period, at)
    pending = Pending(
        collection=collection,
        ids=_ids_at(batch.rows.ids, judged.candidates),
        matrix=judged.matrix,
        delta=judged.delta,
        day=day,
        period_start=period_start,
    )
    return judged, pending


def _ids_at(ids: list[str], positions: list[int]) -> list[str]:
    """``ids`` at ``positions`` (all of them when the positions are every one)."""
    return ids if len(positions) == len(ids) else [ids[position] for position in positions]


@dataclass(frozen=True)
class BatchOutcomes:
    """The answer to a batch: its counts and each report's outcome, as three columns in
    the batch's order (built by this module, so nothing in them needs validating)."""

    accepted: int
    duplicate: int
    rejected: int
    ids: list[str]
    statuses: list[str]
    reasons: list[str | None]

    @property
    def outcomes(self) -> list[dict[str, str | None]]:
        """The outcomes as the plain dicts of :class:`BatchResult`'s shape."""
        return [
            {"id": i, "status": s, "reason": r}
            for i, s, r in zip(self.ids, self.statuses, self.reasons, strict=True)
        ]

    def _document(self) -> dict[str, object]:
        return {
            "accepted": self.accepted,
            "duplicate": self.duplicate,
            "rejected": self.rejected,
            "outcomes": self.outcomes,
        }

    def to_json(self) -> bytes:
        """The JSON of the :class:`BatchResult`, byte for byte what pydantic's core
        writes for it (tested). When every report has one status and no reason (the
        usual batch), the outcomes are one join over the ids, which then all matched
        :data:`REPORT_ID_PATTERN` and hold no character to escape; otherwise pydantic's
        core serialises the dicts (a model validated and dumped would cost about five
        times as much for 1,000 reports)."""
        n = len(self.ids)
        if self.accepted == n or self.duplicate == n:
            status = "accepted" if self.accepted == n else "duplicate"
            counts = f'"accepted":{self.accepted},"duplicate":{self.duplicate},"rejected":0'
            end = f'","status":"{status}","reason":null}}'
            text = f'{{{counts},"outcomes":[{{"id":"' + f'{end},{{"id":"'.join(self.ids)
            return (text + end + "]}").encode()
        return to_json(self._document())

    def to_model(self) -> BatchResult:
        return BatchResult.model_validate(self._document())


def _result(batch: ReportBatch, judged: JudgedBatch, stored_before: set[str]) -> BatchOutcomes:
    ids = batch.rows.ids
    n = len(ids)
    if len(judged.candidates) == n and not stored_before:  # all valid and new
        return BatchOutcomes(n, 0, 0, ids, ["accepted"] * n, judged.reasons)
    statuses: list[str] = []
    counts = {"accepted": 0, "duplicate": 0, "rejected": 0}
    for position, report_id in enumerate(ids):
        if judged.reasons[position] is not None:
            status = "rejected"
        elif position in judged.batch_duplicates or report_id in stored_before:
            status = "duplicate"
        else:
            status = "accepted"
        counts[status] += 1
        statuses.append(status)
    return BatchOutcomes(**counts, ids=ids, statuses=statuses, reasons=judged.reasons)
