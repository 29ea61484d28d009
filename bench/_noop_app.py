"""A no-op upload route: the yardstick of ``bench/ingestion.py``'s single-report requests.

The same request and answer models as ``POST /v1/collections/{name}/reports``
(:class:`~ldp_shared.wire.reports.ReportBatch` in,
:class:`~ldp_shared.wire.reports.BatchResult` out, an ``async`` route as ours is, so
neither pays a thread-pool hop; issue 23) and no middleware; it stores nothing and
answers every report ``accepted``; FastAPI's own telemetry is off, as in the
aggregator (:mod:`ldp_aggregator.telemetry`). Served like the
aggregator (uvicorn, one process, 127.0.0.1, no access log, the same log level)::

    python -m uvicorn --app-dir bench _noop_app:app --host 127.0.0.1 --port PORT \
        --log-level warning --no-access-log

What the aggregator costs beyond this route is its own work: judging and decoding the
reports, the database transaction, its middleware (``bench/request_layers.py``).
"""

from __future__ import annotations

from fastapi import FastAPI

from ldp_aggregator.telemetry import no_telemetry
from ldp_shared.wire.reports import BatchResult, ReportBatch

app = FastAPI(title="no-op upload route (benchmark yardstick)", **no_telemetry())  # as ours


@app.post("/v1/collections/{name}/reports", response_model=BatchResult)
async def upload_reports(name: str, batch: ReportBatch) -> BatchResult:
    """Accept every report without looking at it (the answer has one outcome per report,
    as the aggregator's has)."""
    # the ids' column, as the aggregator reads them (iterating ``batch.reports`` would
    # build a Report object per report, which the aggregator never does)
    outcomes = [{"id": i, "status": "accepted", "reason": None} for i in batch.rows.ids]
    return BatchResult.model_validate(
        {"accepted": len(outcomes), "duplicate": 0, "rejected": 0, "outcomes": outcomes}
    )


@app.get("/readyz")
def ready() -> dict[str, str]:
    """Ready as soon as it answers (the benchmark waits for this)."""
    return {"status": "ready"}
