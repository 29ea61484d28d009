"""Uploading a batch of reports (no token: anyone may contribute, within the upload limits)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import APIRouter, FastAPI, Request, Response

from ldp_aggregator.deps import AppState, app_state
from ldp_aggregator.ingest import ingest_batch_async
from ldp_aggregator.problems import problem_responses
from ldp_aggregator.reshuffler import Reshuffler
from ldp_aggregator.writer import ReportWriter
from ldp_shared.errors import CollectionNotFoundError
from ldp_shared.wire import BatchResult, ReportBatch

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
    """
    state = app_state(request)
    collection = state.collections.peek(name)
    if collection is None:  # loading it reads the database: not in the event loop
        collection = await to_thread.run_sync(state.collections.cached, name)
    address = request.client.host if request.client is not None else None
    refusal = state.upload_limits.admit(collection.name, len(batch.reports), address)
    if refusal is not None:
        state.metrics.count_rate_limited(collection.name, refusal.limit, len(batch.reports))
        raise refusal.error()
    writer = writer_of(request.app)
    try:
        result = await ingest_batch_async(writer, collection, batch)
    except CollectionNotFoundError:
        # deleted since this replica cached it; a collection of the same name may exist now
        state.collections.forget(name)
        collection = await to_thread.run_sync(state.collections.get, name)
        result = await ingest_batch_async(writer, collection, batch)
    state.metrics.count_reports(collection.name, result.accepted, result.duplicate, result.rejected)
    # serialised once here; a returned model would be dumped, validated and dumped again
    return Response(result.to_json(), media_type="application/json")
