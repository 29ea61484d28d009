"""``/healthz`` (liveness), ``/readyz`` (database reachable) and ``/metrics``."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from ldp_aggregator.deps import app_state
from ldp_aggregator.metrics import PROMETHEUS_MEDIA_TYPE
from ldp_aggregator.problems import logger, problem_responses
from ldp_aggregator.storage.engine import ping
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
def readyz(request: Request) -> ReadyStatus:
    """Readiness: the database answers ``SELECT 1``."""
    try:
        ping(app_state(request).engine)
    except SQLAlchemyError as exc:
        logger.warning("readiness check failed: %s", type(exc).__name__)
        raise TransportError("the database is unreachable") from None
    return ReadyStatus()


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request) -> PlainTextResponse:
    """Counters in the Prometheus text format."""
    return PlainTextResponse(app_state(request).metrics.render(), media_type=PROMETHEUS_MEDIA_TYPE)
