"""Prometheus metrics of one app, with ``prometheus_client`` on a registry of its own.

Every app built by :func:`~ldp_aggregator.app.create_app` holds its own
:class:`~prometheus_client.CollectorRegistry`, so tests that build many apps never share
a series, and nothing is registered in the library's global registry.

No label says anything about a client: labels are the HTTP method (one of the standard
methods, else ``other``), the route *template* (``/v1/collections/{name}/reports``, never
the raw path), the status the server answered, a collection's name (chosen by the admin;
counted only after the collection was found, so a client cannot invent label values), a
report outcome, which limit refused an upload, and the class of a database exception.

The series (``_total``, ``_bucket``, ``_sum``, ``_count`` are added by the exposition):

* ``ldpcollect_http_requests_total{method, route, status}``
* ``ldpcollect_http_request_duration_seconds{method, route}`` (histogram)
* ``ldpcollect_reports_total{collection, status}``: reports by outcome
  (``accepted``, ``duplicate``, ``rejected``); the ``collection`` label is new, so a
  query of the fleet's total sums over it
* ``ldpcollect_report_batches_total`` and ``ldpcollect_report_batch_size`` (histogram of
  reports per upload)
* ``ldpcollect_group_commit_size`` (histogram): upload requests written in one
  transaction by the report writer (:mod:`ldp_aggregator.writer`), per transaction
* ``ldpcollect_rate_limited_reports_total{collection, limit}``: reports refused with 429
* ``ldpcollect_database_errors_total{error}``: database exceptions answered as problems
* ``process_*``: the process's CPU, memory and file descriptors (Linux)
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from fastapi import FastAPI, Request
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.exposition import choose_encoder
from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REPORT_STATUSES = ("accepted", "duplicate", "rejected")
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"

BATCH_SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000)
"""Reports per upload: one (a device's single report) up to ``MAX_BATCH`` (10,000)."""

LimitScope = Literal["collection", "address"]


class Metrics:
    """The metrics of one app and the registry that exposes them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self._requests = Counter(
            "ldpcollect_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=r,
        )
        self._latency = Histogram(
            "ldpcollect_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route template.",
            ["method", "route"],
            registry=r,
        )
        self._reports = Counter(
            "ldpcollect_reports",
            "Reports received, by collection and outcome.",
            ["collection", "status"],
            registry=r,
        )
        self._batches = Counter(
            "ldpcollect_report_batches", "Report batches processed.", registry=r
        )
        self._batch_size = Histogram(
            "ldpcollect_report_batch_size",
            "Reports per processed upload.",
            buckets=BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self._group_commit = Histogram(
            "ldpcollect_group_commit_size",
            "Upload requests that shared one transaction (group commit).",
            buckets=BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self._rate_limited = Counter(
            "ldpcollect_rate_limited_reports",
            "Reports refused with 429 because an upload limit was reached.",
            ["collection", "limit"],
            registry=r,
        )
        self._database_errors = Counter(
            "ldpcollect_database_errors",
            "Database exceptions answered with a problem document, by exception class.",
            ["error"],
            registry=r,
        )
        ProcessCollector(registry=r)
        # the labelled series of the two per-request calls, looked up once (issue 23: a
        # lookup by labels costs more than the increment)
        self._request_series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._report_series: dict[str, tuple[Counter, ...]] = {}

    # ------------------------------------------------------------------ observing

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        series = self._request_series.get(key)
        if series is None:  # the labels are bounded (method, route template, status)
            label = method if method in HTTP_METHODS else "other"
            series = (
                self._requests.labels(label, route, str(status)),
                self._latency.labels(label, route),
            )
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def count_reports(self, collection: str, accepted: int, duplicate: int, rejected: int) -> None:
        """One processed upload to ``collection`` (an existing collection's name)."""
        series = self._report_series.get(collection)
        if series is None:
            series = tuple(self._reports.labels(collection, status) for status in REPORT_STATUSES)
            self._report_series[collection] = series
        for counter, count in zip(series, (accepted, duplicate, rejected), strict=True):
            counter.inc(count)
        self._batches.inc()
        self._batch_size.observe(accepted + duplicate + rejected)

    def observe_group_commit(self, uploads: int) -> None:
        """``uploads`` requests were written in one transaction (group commit)."""
        self._group_commit.observe(uploads)

    def count_rate_limited(self, collection: str, limit: LimitScope, reports: int) -> None:
        self._rate_limited.labels(collection, limit).inc(reports)

    def count_database_error(self, exc: BaseException) -> None:
        self._database_errors.labels(type(exc).__name__).inc()

    # ------------------------------------------------------------------ reading

    def reports(self, status: str, collection: str | None = None) -> int:
        """Reports counted with outcome ``status`` (in ``collection``, or in all)."""
        total = 0.0
        for family in self._reports.collect():
            for sample in family.samples:
                labels = sample.labels
                wanted = collection is None or labels["collection"] == collection
                if sample.name.endswith("_total") and labels["status"] == status and wanted:
                    total += sample.value
        return int(total)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The metrics in the format the ``Accept`` header asks for, and its media type.

        Prometheus text format 0.0.4 unless OpenMetrics (or text 1.0.0) is asked for.
        """
        encode, media_type = choose_encoder(accept or "")
        return encode(self.registry), media_type


class MetricsMiddleware:
    """Counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            template = getattr(scope.get("route"), "path", None)
            self.metrics.observe_request(
                str(scope.get("method", "")),
                template if isinstance(template, str) else UNMATCHED_ROUTE,
                status,
                time.perf_counter() - started,
            )


Handler = Callable[[Request, Exception], Awaitable[Response] | Response]


def count_database_errors(app: FastAPI, metrics: Metrics) -> None:
    """Count every database exception that one of ``app``'s handlers answers.

    Wraps the handlers installed for :class:`~sqlalchemy.exc.SQLAlchemyError` and its
    subclasses (``problems.install_problem_handlers`` turns them into problem documents),
    so call it after they are installed.
    """
    for key, handler in list(app.exception_handlers.items()):
        if isinstance(key, type) and issubclass(key, SQLAlchemyError):
            app.exception_handlers[key] = _counting(handler, metrics)


def _counting(handler: Handler, metrics: Metrics) -> Handler:
    async def counted(request: Request, exc: Exception) -> Response:
        metrics.count_database_error(exc)
        answer = handler(request, exc)
        return await answer if inspect.isawaitable(answer) else answer

    return counted
