"""The FastAPI app factory."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version

from anyio import to_thread
from fastapi import Depends, FastAPI, Request

from ldp_aggregator.deps import AppState
from ldp_aggregator.media_types import require_json_media_type
from ldp_aggregator.metrics import Metrics, count_database_errors
from ldp_aggregator.openapi import document_truthfully
from ldp_aggregator.problems import install_problem_handlers
from ldp_aggregator.query_params import require_known_query
from ldp_aggregator.rate_limits import UploadLimits
from ldp_aggregator.request_guard import RequestGuardMiddleware
from ldp_aggregator.routes import analyses, collections, health, models, reports
from ldp_aggregator.routes import itemsets as itemset_routes
from ldp_aggregator.routes import knn as knn_routes
from ldp_aggregator.routes import periods as period_routes
from ldp_aggregator.routes import plan as plan_routes
from ldp_aggregator.routes import privacy as privacy_routes
from ldp_aggregator.routes import shuffled as shuffled_routes
from ldp_aggregator.routes import training as training_routes
from ldp_aggregator.routes import trends as trend_routes
from ldp_aggregator.routes.device_shortcut import DeviceShortcut, device_routes
from ldp_aggregator.settings import Settings
from ldp_aggregator.storage.collections import CollectionCache
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import upgrade
from ldp_aggregator.telemetry import no_telemetry
from ldp_aggregator.ui import install_dashboard

DESCRIPTION = """\
Collects perturbed reports under local differential privacy and releases honest
statistics from them. Errors are RFC 9457 problem documents
(`https://ldpcollect.dev/problems/<slug>`).
"""


def _version() -> str:
    try:
        return version("ldpcollect")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0.0.0"


async def check_request(request: Request) -> None:
    """What every route checks first, in one dependency (each one costs every request,
    uploads included): 415 for a JSON route's body of another media type; 422 for an
    API query's unknown or repeated parameter (FastAPI would ignore the one and keep the
    last of the other)."""
    await require_json_media_type(request)
    await require_known_query(request)


def create_app(
    settings: Settings | None = None, *, randbelow: Callable[[int], int] = secrets.randbelow
) -> FastAPI:
    """Build an aggregator app: engine, token digests, metrics, upload limits and routes.

    ``randbelow`` is the source of the server's own draws (:attr:`AppState.randbelow`):
    the CSPRNG by default, a seeded one in tests. Nothing is shared between apps. At
    startup (lifespan) the database schema is brought to the newest revision unless
    ``settings.migrate_on_startup`` is off; at shutdown the engine's connections are
    closed.
    """
    given = settings if settings is not None else Settings()
    kept = given.without_plain_tokens()  # only the digests stay in memory
    engine = make_engine(kept.database_url)
    state = AppState(
        settings=kept,
        engine=engine,
        tokens=kept.token_digests(),
        collections=CollectionCache(engine),
        metrics=Metrics(),
        upload_limits=UploadLimits(
            kept.upload_rate_per_collection,
            kept.upload_burst_per_collection,
            kept.upload_rate_per_address,
            kept.upload_burst_per_address,
        ),
        randbelow=randbelow,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if kept.migrate_on_startup:
            await to_thread.run_sync(upgrade, engine)
        if kept.log_url is not None:  # log mode (docs/log-mode.md): nats imported only then
            from ldp_aggregator.ingest_log.publisher import LogPublisher
            from ldp_aggregator.ingest_log.stream import log_settings_of

            _app.state.ldp_log = await LogPublisher.open(log_settings_of(kept))
        try:
            yield
        finally:
            log = getattr(_app.state, "ldp_log", None)
            if log is not None:
                await log.close()
            committer = getattr(_app.state, "training_committer", None)
            if committer is not None:  # its thread's kept connection, before the engine's
                await to_thread.run_sync(committer.close)
            engine.dispose()

    app = FastAPI(
        title="ldpcollect aggregator",
        version=_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        dependencies=[Depends(check_request)],
        docs_url=None,  # served by install_dashboard from local files, not a CDN
        redoc_url=None,  # ReDoc would load from a CDN: not served
        **no_telemetry(),  # no span or log of a request: who sent it, and when
    )
    app.state.ldp = state
    install_problem_handlers(app)
    document_truthfully(app)
    count_database_errors(app, state.metrics)
    # the devices' routes first: a request is matched against the routes in this order,
    # about 2 µs a route (a training device's place and report were matched after some
    # 50 analyst routes: 0.2 ms of each device's 2.2 ms of server CPU)
    app.include_router(reports.router)
    app.include_router(training_routes.router)
    app.include_router(health.router)
    app.include_router(collections.router)
    app.include_router(analyses.router)
    app.include_router(trend_routes.router)
    app.include_router(period_routes.router)
    app.include_router(itemset_routes.router)
    app.include_router(models.router)
    app.include_router(knn_routes.router)
    app.include_router(privacy_routes.router)
    app.include_router(plan_routes.router)
    app.include_router(shuffled_routes.router)
    install_dashboard(app)
    # the devices' plainly valid requests, answered without the framework's routing and
    # dependencies (issue 23), inside the request guard below
    app.add_middleware(DeviceShortcut, routes=device_routes())
    # one layer does metrics, the body limit and the last-resort 500 (issue 23: each
    # pure-ASGI layer costs every request)
    app.add_middleware(
        RequestGuardMiddleware, metrics=state.metrics, max_body_bytes=kept.max_body_bytes
    )
    return app
