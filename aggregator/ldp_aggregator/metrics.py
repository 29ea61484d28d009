"""Prometheus counters, kept in memory per app (text exposition format, no dependency)."""

from __future__ import annotations

import threading
from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

REPORT_STATUSES = ("accepted", "duplicate", "rejected")
PROMETHEUS_MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe counters of requests and report outcomes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str, str]] = Counter()
        self._reports: Counter[str] = Counter({status: 0 for status in REPORT_STATUSES})
        self._batches = 0

    def count_request(self, method: str, route: str, status: int) -> None:
        with self._lock:
            self._requests[(method, route, str(status))] += 1

    def count_reports(self, accepted: int, duplicate: int, rejected: int) -> None:
        with self._lock:
            self._batches += 1
            self._reports["accepted"] += accepted
            self._reports["duplicate"] += duplicate
            self._reports["rejected"] += rejected

    def reports(self, status: str) -> int:
        with self._lock:
            return self._reports[status]

    def render(self) -> str:
        """The counters in the Prometheus text exposition format."""
        with self._lock:
            requests = sorted(self._requests.items())
            reports = dict(self._reports)
            batches = self._batches
        lines = [
            "# HELP ldpcollect_reports_total Reports received, by outcome.",
            "# TYPE ldpcollect_reports_total counter",
        ]
        lines += [
            f'ldpcollect_reports_total{{status="{status}"}} {reports[status]}'
            for status in REPORT_STATUSES
        ]
        lines += [
            "# HELP ldpcollect_report_batches_total Report batches processed.",
            "# TYPE ldpcollect_report_batches_total counter",
            f"ldpcollect_report_batches_total {batches}",
            "# HELP ldpcollect_http_requests_total HTTP requests answered, by method, route "
            "and status.",
            "# TYPE ldpcollect_http_requests_total counter",
        ]
        lines += [
            f'ldpcollect_http_requests_total{{method="{_escape(method)}",'
            f'route="{_escape(route)}",status="{status}"}} {count}'
            for (method, route, status), count in requests
        ]
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    """Counts every HTTP request by method, route template (not raw path) and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None)
            self.metrics.count_request(
                str(scope.get("method", "")),
                template if isinstance(template, str) else "unmatched",
                status,
            )
