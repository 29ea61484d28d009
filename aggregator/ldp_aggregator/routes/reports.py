"""Uploading a batch of reports (no token: anyone may contribute, within the upload limits)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ldp_aggregator.deps import app_state
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.problems import problem_responses
from ldp_shared.wire import BatchResult, ReportBatch

router = APIRouter(prefix="/v1/collections", tags=["reports"])


@router.post(
    "/{name}/reports", response_model=BatchResult, responses=problem_responses(404, 413, 429, 503)
)
def upload_reports(name: str, batch: ReportBatch, request: Request) -> BatchResult:
    """Store a batch of perturbed reports; one outcome per report, in order.

    Over an upload limit: 429 with ``Retry-After``, and nothing is stored.
    """
    state = app_state(request)
    collection = state.collections.get(name)
    address = request.client.host if request.client is not None else None
    refusal = state.upload_limits.admit(collection.name, len(batch.reports), address)
    if refusal is not None:
        state.metrics.count_rate_limited(collection.name, refusal.limit, len(batch.reports))
        raise refusal.error()
    result = ingest_batch(state.engine, collection, batch)
    state.metrics.count_reports(collection.name, result.accepted, result.duplicate, result.rejected)
    return result
