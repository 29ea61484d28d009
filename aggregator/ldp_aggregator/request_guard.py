"""One pure ASGI middleware around every request: metrics, query text, body limit, last 500.

It does in one layer what three did before (issue 23; ``bench/request_layers.py``
measures each layer's CPU per request), in this order, outermost first:

1. **metrics**: counts and times the request by method, route template and the status
   answered (:meth:`~ldp_aggregator.metrics.Metrics.observe_request`), whatever the
   answer, including the two below;
2. **query text**: a query string that is not UTF-8 once percent-decoded (``%FF``, an
   encoded surrogate) is answered ``422 invalid-query``; without this, Starlette decodes
   it with replacement characters and a query such as ``values=%FF`` would estimate a
   string nobody named;
3. **body size limit**: reads the whole body first and answers ``413 payload-too-large``
   when the declared or received bytes pass the limit
   (:func:`~ldp_aggregator.limits.read_limited_body`), so such a request never reaches a
   route;
4. **unexpected errors**: an exception that no handler of the app took is answered with
   a ``500`` problem document, logged with an id that its ``detail`` repeats, without
   re-raising, so the keep-alive connection stays usable (the reason is given in
   :func:`~ldp_aggregator.problems.install_problem_handlers`). An error after the answer
   has started cannot be answered and is re-raised.

Security headers are not set here: the dashboard's pages set theirs, and API answers are
JSON problem documents or JSON bodies.
"""

from __future__ import annotations

import time
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ldp_aggregator.limits import Refusal, read_limited_body, refusal_response, replaying
from ldp_aggregator.metrics import UNMATCHED_ROUTE, Metrics
from ldp_aggregator.problems import error_response, internal_error
from ldp_shared.errors import InvalidQueryError


class RequestGuardMiddleware:
    """Metrics, the body size limit and the last-resort 500 of every HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics, max_body_bytes: int) -> None:
        if max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        status = 500
        answering = False

        async def observe(message: Message) -> None:
            nonlocal status, answering
            if message["type"] == "http.response.start":
                status = int(message["status"])
                answering = True
            await send(message)

        try:
            query: bytes = scope.get("query_string", b"")
            if b"%" in query and not _is_utf8_once_decoded(query):
                refused = error_response(
                    InvalidQueryError,
                    "the query string is not UTF-8 once percent-decoded: encode each"
                    " parameter's text as UTF-8 before percent-encoding it",
                )
                await refused(scope, receive, observe)
                return
            body = await read_limited_body(scope, receive, self.max_body_bytes)
            if isinstance(body, Refusal):
                await refusal_response(body, self.max_body_bytes)(scope, receive, observe)
            elif body is not None:  # None: the client left before sending its whole body
                try:
                    await self.app(scope, replaying(body, receive), observe)
                except Exception as exc:
                    if answering:
                        raise
                    method, path = str(scope.get("method", "")), str(scope.get("path", ""))
                    answer = internal_error(method, path, exc)
                    await answer(scope, receive, observe)
        finally:
            template = getattr(scope.get("route"), "path", None)
            self.metrics.observe_request(
                str(scope.get("method", "")),
                template if isinstance(template, str) else UNMATCHED_ROUTE,
                status,
                time.perf_counter() - started_at,
            )


def _is_utf8_once_decoded(query: bytes) -> bool:
    """Whether the percent-decoded query string is UTF-8 (every parameter is, then)."""
    try:
        unquote_to_bytes(query).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
