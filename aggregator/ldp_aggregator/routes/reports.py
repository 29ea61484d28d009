"""Uploading a batch of reports (no token: anyone may contribute, within the upload limits)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import APIRouter, FastAPI, Request, Response

from ldp_aggregator.deps import AppState, app_state
from ldp_aggregator.ingest import BatchOutcomes, ingest_batch_async
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.reshuffler import Reshuffler
from ldp_aggregator.storage.collections import StoredCollection
from ldp_aggregator.writer import ReportWriter
from ldp_shared.errors import CollectionNotFoundError, ConflictError
from ldp_shared.wire.reports import BatchResult, ReportBatch

_CREATE_LOCK = threading.Lock()


def writer_of(app: FastAPI) -> ReportWriter:
    """The app's report writer, created on first use with its :class:`Reshuffler`."""
    reshuffler: Reshuffler | None = getattr(app.state, "ldp_reshuffler", None)
    if reshuffler is None:
        with _CREATE_LOCK:
            reshuffler = getattr(app.state, "ldp_reshuffler", None)
            if reshuffler is None:
                state = app.state.ldp
                assert isinstance(state, AppState)
                writer = ReportWriter(state.engine, on_commit=state.metrics.observe_group_commit)
                reshuffler = Reshuffler(writer, state.settings.reshuffle_seconds)
                reshuffler.start()
                app.state.ldp_reshuffler = reshuffler
    return reshuffler.writer


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    writer_of(app)
    try:
        yield
    finally:
        reshuffler: Reshuffler | None = getattr(app.state, "ldp_reshuffler", None)
        if reshuffler is not None:
            await to_thread.run_sync(reshuffler.stop)


router = APIRouter(prefix="/v1/collections", tags=["reports"], lifespan=_lifespan)


@router.post(
    "/{name}/reports",
    response_model=BatchResult,
    responses=problem_responses(404, 409, 413, 429, 503),
)
async def upload_reports(name: str, batch: ReportBatch, request: Request) -> Response:
    """Store a batch of perturbed reports; one outcome per report, in order.

    Over an upload limit: 429 with ``Retry-After``, and nothing is stored. To a
    collection an admin closed: 409 ``collection-closed`` for the whole batch, and
    nothing is stored.

    What the outcomes promise depends on the mode (docs/log-mode.md). Direct mode (the
    default): ``accepted`` means stored and counted in the statistics before this answer;
    ``duplicate`` means the id was stored already (or repeated in the batch) and counts
    once. Log mode (``--log``): ``accepted`` means durably in the replicated log (the
    stream's publish acknowledgement) and counted once a fold worker has folded it,
    usually within seconds; ``duplicate`` means the log held the same message within its
    deduplication window (the same single report, or the same batch, sent again) or the
    id repeated in the batch; a retry older than that window, or a report sent again in
    a different batch, is answered ``accepted`` and still counted once, at fold time. In
    both modes a 503 means nothing of the batch may be assumed stored, and the same batch
    may be sent again.
    """
    state = app_state(request)
    collection = state.collections.peek(name)
    if collection is None:  # loading it reads the database: not in the event loop
        collection = await to_thread.run_sync(state.collections.cached, name)
    if collection.config.spec.shuffled:  # docs/shuffler.md
        raise ConflictError(
            f"collection {name!r} is shuffled: it takes no direct uploads; seal each report"
            " to its sealing key and send it to the shuffler"
        )
    address = request.client.host if request.client is not None else None
    refusal = state.upload_limits.admit(collection.name, len(batch.reports), address)
    if refusal is not None:
        state.metrics.count_rate_limited(collection.name, refusal.limit, len(batch.reports))
        raise refusal.error()
    writer = writer_of(request.app)
    log = getattr(request.app.state, "ldp_log", None)  # log mode: docs/log-mode.md
    try:
        result = await _ingest(log, writer, collection, batch)
    except CollectionNotFoundError:
        # deleted since this replica cached it; a collection of the same name may exist now
        state.collections.forget(name)
        collection = await to_thread.run_sync(state.collections.get, name)
        result = await _ingest(log, writer, collection, batch)
    state.metrics.count_reports(collection.name, result.accepted, result.duplicate, result.rejected)
    # serialised once here; a returned model would be dumped, validated and dumped again
    return Response(result.to_json(), media_type="application/json")


async def _ingest(
    log: object, writer: ReportWriter, collection: StoredCollection, batch: ReportBatch
) -> BatchOutcomes:
    """Direct mode: into the database; log mode (``log`` set): into the log."""
    if log is None:
        return await ingest_batch_async(writer, collection, batch)
    # log mode only: nats is not even imported in direct mode
    from ldp_aggregator.ingest_log.publisher import LogPublisher, publish_batch

    assert isinstance(log, LogPublisher)
    return await publish_batch(log, collection, batch, writer.engine)
