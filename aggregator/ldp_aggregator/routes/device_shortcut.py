"""The devices' routes without FastAPI's per-request machinery (issue 23).

A device sends one report per request (``POST /v1/collections/{name}/reports``), and a
training device two (``POST .../participations`` for a place, ``PUT
.../participations/{token}`` for its report), so whatever the framework does around
these routes is paid once per report: matching the path against the app's routes,
solving the route's dependencies (the app-wide ``check_request`` among them), validating
the body through the route's field, and three more middleware layers (exceptions, the
exit stack of dependencies, the router). In a profile of single-report uploads that
machinery was most of the event loop's CPU per request; the route's own work was about a
fifth of it (docs/benchmarks.md, "The request path of one report").

:class:`DeviceShortcut` sits just inside
:class:`~ldp_aggregator.request_guard.RequestGuardMiddleware`, which still counts, times
and limits every request and answers its last-resort 500. It calls the route's own
endpoint function, with the arguments FastAPI would give it, for the requests whose
answer cannot depend on what it skips:

* the route's method and exactly its path (``{name}`` and ``{job_id}`` matched as
  Starlette's ``str`` convertor matches them), with no query string and no root path:
  the routes take no query parameter, so ``check_request`` would pass;
* for a route with a JSON body, a ``Content-Type`` that FastAPI reads as JSON (so
  ``check_request`` would pass) and a body that ``json.loads`` reads and the route's
  body model validates, as FastAPI reads and validates it; a participation's token
  matching its pattern.

An error the endpoint raises is answered by the handler the app installed for it, as
Starlette's exception layer would answer it. Every other request, and every request whose
path, token or body would not validate, goes on to the app unchanged (its body replayed),
so the route answers it as before: one code path for what a device's request does, one
for every error of a malformed request. ``tests/aggregator/test_device_shortcut.py``
holds the answers equal to the app's without the shortcut.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ldp_aggregator.limits import read_limited_body, replaying
from ldp_aggregator.media_types import is_json_media_type
from ldp_aggregator.routes import reports, training
from ldp_shared.wire.reports import ReportBatch
from ldp_shared.wire.training import TOKEN_PATTERN, ParticipationReport

_TOKEN = re.compile(TOKEN_PATTERN.removeprefix("^").removesuffix("$"))
"""The token's pattern, matched whole (never looser than the route's own check)."""


@dataclass(frozen=True)
class DeviceRoute:
    """One route the shortcut takes: its method, path, endpoint and body model."""

    route: APIRoute
    method: str
    path: re.Pattern[str]
    body: type[BaseModel] | None
    body_argument: str = ""
    checks: Callable[[dict[str, str]], bool] = lambda _: True
    """Whether the path's parameters pass the route's own checks (else: the route)."""


def _route_of(endpoint: Callable[..., Any], routes: list[Any]) -> APIRoute:
    found = [r for r in routes if isinstance(r, APIRoute) and r.endpoint is endpoint]
    assert len(found) == 1, endpoint
    return found[0]


def device_routes() -> list[DeviceRoute]:
    """The routes every device calls, as the shortcut takes them."""
    upload = _route_of(reports.upload_reports, reports.router.routes)
    place = _route_of(training.participate, training.router.routes)
    report = _route_of(training.send_participation_report, training.router.routes)
    return [
        DeviceRoute(upload, "POST", upload.path_regex, ReportBatch, "batch"),
        DeviceRoute(place, "POST", place.path_regex, None),
        DeviceRoute(
            report,
            "PUT",
            report.path_regex,
            ParticipationReport,
            "body",
            lambda params: _TOKEN.fullmatch(params["token"]) is not None,
        ),
    ]


class DeviceShortcut:
    """Call the devices' endpoints directly for plainly valid requests; pass on the rest."""

    def __init__(self, app: ASGIApp, routes: list[DeviceRoute]) -> None:
        self.app = app
        self.routes = routes

    def _taken(self, scope: Scope) -> tuple[DeviceRoute, dict[str, str]] | None:
        if scope["type"] != "http" or scope.get("query_string") or scope.get("root_path"):
            return None
        for device in self.routes:
            if scope["method"] != device.method:
                continue
            match = device.path.match(scope["path"])
            if match is None:
                continue
            params = match.groupdict()
            if not device.checks(params):
                return None
            if device.body is not None and not is_json_media_type(_content_type(scope)):
                return None
            return device, params
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        taken = self._taken(scope)
        if taken is None:
            await self.app(scope, receive, send)
            return
        device, params = taken
        arguments: dict[str, Any] = dict(params)
        if device.body is not None:
            # the request guard has read and limited it already: here one replayed message
            body = await read_limited_body(scope, receive, sys.maxsize)
            if not isinstance(body, bytes):  # the client left before sending it all
                return
            try:
                arguments[device.body_argument] = device.body.model_validate(json.loads(body))
            except Exception:  # the route names what is wrong (FastAPI: any read error)
                await self.app(scope, replaying(body, receive), send)
                return
        scope["route"] = device.route  # what the request guard's metrics label it with
        request = Request(scope, receive)
        try:
            answer = await device.route.endpoint(**arguments, request=request)
        except Exception as exc:
            handler = _handler_of(scope["app"].exception_handlers, exc)
            if handler is None:
                raise  # the request guard's last-resort 500, as for the route
            # as Starlette's exception layer: a handler may be sync, may answer nothing,
            # and a handled exception keeps no traceback (one may be raised again)
            if _is_async(handler):
                answer = await handler(request, exc)
            else:
                answer = await run_in_threadpool(handler, request, exc)
            exc.__traceback__ = None
            if answer is None:
                return
        await answer(scope, receive, send)


def _content_type(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return str(value.decode("latin-1"))
    return None


def _is_async(handler: Any) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        type(handler).__call__
    )


def _handler_of(handlers: dict[Any, Any], exc: Exception) -> Any:
    """The app's handler of ``exc`` as Starlette's exception layer finds it (the nearest
    class in its MRO), leaving out the ``Exception`` handler that only the outermost
    layer calls."""
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in handlers:
            return handlers[cls]
    return None
