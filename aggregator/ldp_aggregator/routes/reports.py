"""Uploading a batch of reports (no token: anyone may contribute)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ldp_aggregator.deps import app_state
from ldp_aggregator.ingest import ingest_batch
from ldp_aggregator.problems import problem_responses
from ldp_shared.wire import BatchResult, ReportBatch

router = APIRouter(prefix="/v1/collections", tags=["reports"])


@router.post(
    "/{name}/reports", response_model=BatchResult, responses=problem_responses(404, 413, 503)
)
def upload_reports(name: str, batch: ReportBatch, request: Request) -> BatchResult:
    """Store a batch of perturbed reports; one outcome per report, in order."""
    state = app_state(request)
    collection = state.collections.get(name)
    result = ingest_batch(state.engine, collection, batch)
    state.metrics.count_reports(collection.name, result.accepted, result.duplicate, result.rejected)
    return result
