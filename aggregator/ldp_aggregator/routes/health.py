"""``/healthz`` (liveness), ``/readyz`` (database, and log in log mode, reachable) and
``/metrics``."""

from __future__ import annotations

from typing import Literal

from anyio import to_thread
from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from ldp_aggregator.auth import require_metrics_reader
from ldp_aggregator.deps import app_state
from ldp_aggregator.problems import logger, problem_responses
from ldp_aggregator.storage.engine import ping
from ldp_aggregator.storage.migrate import schema_of
from ldp_shared.errors import TransportError

router = APIRouter(tags=["operations"])


class HealthStatus(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyStatus(BaseModel):
    status: Literal["ready"] = "ready"


@router.get("/healthz", response_model=HealthStatus)
def healthz() -> HealthStatus:
    """Liveness: the process answers (touches nothing)."""
    return HealthStatus()


@router.get("/readyz", response_model=ReadyStatus, responses=problem_responses(503))
async def readyz(request: Request) -> ReadyStatus:
    """Readiness: the database answers ``SELECT 1`` and its schema is not older than
    this code's (migrations left to ``ldpcollect migrate`` may not have run yet); in log
    mode, the log is connected and its stream answers too (docs/log-mode.md)."""
    state = app_state(request)
    try:
        await to_thread.run_sync(ping, state.engine)
        # read until found current (or newer): a schema is not migrated backwards
        if not getattr(request.app.state, "ldp_schema_ready", False):
            schema = await to_thread.run_sync(schema_of, state.engine)
            if schema.behind:
                raise TransportError(schema.problem("this server") or "")
            request.app.state.ldp_schema_ready = True
    except SQLAlchemyError as exc:
        state.metrics.count_database_error(exc)
        logger.warning("readiness check failed: %s", type(exc).__name__)
        raise TransportError("the database is unreachable") from None
    log = getattr(request.app.state, "ldp_log", None)
    if log is not None:
        await log.check()  # a LogUnavailableError: 503
    return ReadyStatus()


_EXPOSITION = {
    "description": "The Prometheus text exposition (OpenMetrics when the Accept header asks)",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: _EXPOSITION, **problem_responses(401, 403)},
    dependencies=[Depends(require_metrics_reader)],
)
def metrics(request: Request) -> Response:
    """The app's metrics in the Prometheus text format (OpenMetrics when asked for).

    Open unless ``LDPCOLLECT_METRICS_TOKEN`` is set; then the metrics token or the admin
    token must be presented.
    """
    body, media_type = app_state(request).metrics.exposition(request.headers.get("accept"))
    return Response(body, media_type=media_type)
