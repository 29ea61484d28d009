"""FastAPI's own OpenTelemetry, switched off in every app of this package.

Recent FastAPI releases trace, count and log each request through OpenTelemetry whenever
a tracer, meter or logger provider is configured in the process, and can configure one
from the environment (``FASTAPI_OTEL_AUTO_CONFIGURE``). A span or log record of an HTTP
request carries its client address, path and time: per report upload, that is what
docs/privacy-at-rest.md promises nothing keeps (who sent a report, and when, in order).
So the aggregator and the shuffler pass :func:`no_telemetry` to ``FastAPI()``: no
provider is consulted, none is configured, and each request skips the check of whether
one is (a lookup in ``os.environ`` per request). The service's own metrics
(``/metrics``, :mod:`ldp_aggregator.metrics`) count without addresses or times of single
requests.

With a FastAPI too old to have the option there is nothing to switch off, and
:func:`no_telemetry` adds nothing.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI

__all__ = ["TELEMETRY_OFF", "no_telemetry"]

TELEMETRY_OFF = {"tracing": False, "metrics": False, "logs": False, "auto_configure": False}
"""FastAPI's ``telemetry`` setting with every signal and the automatic set-up off."""


def no_telemetry() -> dict[str, Any]:
    """Keyword arguments for ``FastAPI()`` that switch its telemetry off (none where the
    installed FastAPI has no ``telemetry`` argument)."""
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters:
        return {"telemetry": dict(TELEMETRY_OFF)}
    return {}
