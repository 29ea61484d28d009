"""RFC 9457 problem documents for every error the API returns.

One ``type`` per class of :mod:`ldp_shared.errors`; the handlers installed by
:func:`install_problem_handlers` turn every exception into a problem document, and
never leak internals on a 500.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from ldp_shared.errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    CorruptStatisticsError,
    InfeasiblePlanError,
    InsufficientReportsError,
    InvalidQueryError,
    InvalidRecordError,
    InvalidReportError,
    InvalidRequestError,
    JobCancelledError,
    LDPError,
    MalformedRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PrivacyPolicyError,
    RateLimitedError,
    ReportRejectedError,
    StorageFullError,
    TransportError,
    UnsupportedMediaTypeError,
    problem_type,
)
from ldp_shared.validation import one_line, readable

logger = logging.getLogger("ldp_aggregator")

HTTP_STATUS: dict[type[LDPError], int] = {
    LDPError: 500,
    ConfigurationError: 422,
    InvalidRecordError: 422,
    InvalidReportError: 422,
    InvalidQueryError: 422,
    InfeasiblePlanError: 422,
    NotFoundError: 404,
    ConflictError: 409,
    InsufficientReportsError: 409,
    AuthenticationError: 401,
    PermissionDeniedError: 403,
    PayloadTooLargeError: 413,
    UnsupportedMediaTypeError: 415,
    MalformedRequestError: 400,
    InvalidRequestError: 422,
    TransportError: 503,
    StorageFullError: 503,
    RateLimitedError: 429,
    ReportRejectedError: 422,
    PrivacyPolicyError: 403,
    JobCancelledError: 503,
    CorruptStatisticsError: 500,
}
"""The HTTP status of each error class (a subclass answers as its nearest listed base)."""


def http_status(error: type[LDPError]) -> int:
    """The status a problem document of class ``error`` is answered with."""
    for klass in error.__mro__:
        if klass in HTTP_STATUS:
            return HTTP_STATUS[klass]
    return 500


PROBLEM_MEDIA_TYPE = "application/problem+json"
_VALIDATION_PROBLEM_ATTR = "__ldp_validation_problem__"

F = TypeVar("F", bound=Callable[..., Any])


class ProblemDetailError(BaseModel):
    """One validation failure: where (``loc``) and what (``msg``)."""

    loc: list[str | int]
    msg: str


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str
    title: str
    status: int
    detail: str
    errors: list[ProblemDetailError] | None = None


def problem_response(
    status: int,
    type_uri: str,
    title: str,
    detail: str,
    errors: Sequence[ProblemDetailError] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """A ``application/problem+json`` response."""
    body = Problem(
        type=type_uri,
        title=title,
        status=status,
        detail=detail,
        errors=list(errors) if errors is not None else None,
    )
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def error_response(
    error: type[LDPError],
    detail: str,
    errors: Sequence[ProblemDetailError] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The problem document of an error class of :mod:`ldp_shared.errors`."""
    if headers is None and issubclass(error, AuthenticationError):
        headers = {"WWW-Authenticate": "Bearer"}
    return problem_response(
        http_status(error), problem_type(error), error.title, detail, errors, headers
    )


def body_validation_problem(error: type[LDPError]) -> Callable[[F], F]:
    """Mark an endpoint so that a failed validation of its body is reported as ``error``.

    ``POST /v1/collections`` uses it to answer a bad spec with ``invalid-configuration``.
    """

    def mark(endpoint: F) -> F:
        setattr(endpoint, _VALIDATION_PROBLEM_ATTR, error)
        return endpoint

    return mark


def _validation_errors(raw: Sequence[Any]) -> list[ProblemDetailError]:
    return [
        ProblemDetailError(
            loc=[part if isinstance(part, int) else str(part) for part in item.get("loc", ())],
            msg=readable(str(item.get("msg", "invalid"))),
        )
        for item in raw
    ]


async def _on_ldp_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LDPError)
    headers = None
    if isinstance(exc, RateLimitedError) and exc.retry_after is not None:
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    return error_response(type(exc), exc.detail, headers=headers)


def _is_missing_body(item: Any) -> bool:
    return item.get("type") == "missing" and tuple(item.get("loc", ())) == ("body",)


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    raw = list(exc.errors())
    if any(item.get("type") == "json_invalid" for item in raw):
        decode = next(item for item in raw if item.get("type") == "json_invalid")
        reason = (decode.get("ctx") or {}).get("error", "JSON decode error")
        position = decode.get("loc", ("body", 0))[-1]
        return error_response(
            MalformedRequestError, f"the body is not valid JSON: {reason} at position {position}"
        )
    if any(_is_missing_body(item) for item in raw):
        return error_response(MalformedRequestError, "the request needs a JSON body")
    errors = _validation_errors(raw)
    error_class: type[LDPError] = InvalidRequestError
    route = request.scope.get("route")
    endpoint = getattr(route, "endpoint", None)
    marked = getattr(endpoint, _VALIDATION_PROBLEM_ATTR, None)
    if marked is not None and all(e.loc[:1] == ["body"] for e in errors):
        error_class = marked
    return error_response(error_class, one_line(raw), errors)


READABLE_JSON_DEPTH = 500
"""Nesting of arrays and objects every body is read with (a test holds it): deeper bodies
may pass Python's recursion limit in its JSON reader."""


ROUTE_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
"""The methods a 405's ``Allow`` is looked up among (``OPTIONS`` is answered by no route)."""


def allowed_methods(request: Request) -> str:
    """``Allow`` of a 405: every method some route answers at the request's path.

    Starlette names only the methods of the first route whose path matched, so a path
    served by two routes (``GET`` and ``POST /v1/collections``) listed one of them.
    """
    allowed = []
    for method in ROUTE_METHODS:
        scope = {
            "type": "http",
            "method": method,
            "path": request.scope["path"],
            "root_path": request.scope.get("root_path", ""),
            "headers": [],
        }
        routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.append(method)
    return ", ".join(allowed)


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405 and headers is not None and "Allow" in headers:
        headers["Allow"] = allowed_methods(request) or headers["Allow"]
    if exc.status_code == 404:
        return error_response(
            NotFoundError, f"nothing at {request.method} {request.url.path}", headers=headers
        )
    if exc.status_code == 400:
        # FastAPI's answer to a body it cannot read at all: not UTF-8, or nested deeper
        # than Python's JSON reader recurses (it raises RecursionError)
        detail = "the body is not valid JSON text"
        if isinstance(exc.__cause__, RecursionError):
            detail = (
                "the body's JSON nests arrays and objects too deeply to be read: the"
                f" aggregator reads up to {READABLE_JSON_DEPTH} levels (this API's bodies nest a"
                " few levels)"
            )
        return error_response(MalformedRequestError, detail, headers=headers)
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        phrase = "Error"
    detail = exc.detail if isinstance(exc.detail, str) else phrase
    return problem_response(exc.status_code, "about:blank", phrase, detail, headers=headers)


SQLITE_FULL = 13
"""SQLite's result code for a write that found no room (full disk, or max_page_count)."""
POSTGRES_DISK_FULL = "53100"
"""PostgreSQL's SQLSTATE ``disk_full``."""


def is_storage_full(exc: OperationalError) -> bool:
    """Whether the database refused a write for want of space (SQLite or PostgreSQL)."""
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == SQLITE_FULL) or (
        getattr(exc.orig, "sqlstate", None) == POSTGRES_DISK_FULL
    )


async def _on_database_unavailable(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, OperationalError)
    if is_storage_full(exc):
        logger.error("the database is full: %s", type(exc.orig).__name__)
        return error_response(
            StorageFullError,
            "the database has no room left: nothing of this request was stored; send it"
            " again once the operator has freed space",
            headers={"Retry-After": "60"},
        )
    logger.warning("database unavailable: %s", type(exc.orig).__name__)
    return error_response(TransportError, "the database is unavailable; retry later")


def internal_error(method: str, path: str, exc: BaseException) -> JSONResponse:
    """The 500 problem document of an error no handler took, logged with an id that its
    ``detail`` repeats."""
    error_id = secrets.token_hex(8)
    logger.error("unhandled error %s on %s %s", error_id, method, path, exc_info=exc)
    return problem_response(
        500,
        problem_type(LDPError),
        "Internal server error",
        f"the aggregator failed to process the request; the error was logged as {error_id}",
    )


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    return internal_error(request.method, request.url.path, exc)


def install_problem_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with a problem document.

    The ``Exception`` handler below is what Starlette's outermost middleware calls, and
    that middleware re-raises after answering, so the server drops the keep-alive
    connection without a ``Connection: close`` and the client's next request on it
    fails. The app therefore answers such errors earlier, inside its outermost own middleware
    (:class:`~ldp_aggregator.request_guard.RequestGuardMiddleware`, with
    :func:`internal_error`), without re-raising."""
    app.add_exception_handler(LDPError, _on_ldp_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(OperationalError, _on_database_unavailable)
    app.add_exception_handler(Exception, _on_unexpected)


def _problem_entry(description: str) -> dict[str, Any]:
    """An OpenAPI response of a problem document, under its real media type."""
    schema = {"$ref": "#/components/schemas/Problem"}
    return {
        "model": Problem,
        "description": description,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": schema}},
    }


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: _problem_entry(description)
    for status, description in {
        400: "Malformed request (body is not JSON)",
        422: "Invalid request, configuration or query",
        500: "Internal server error",
    }.items()
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the given problem statuses (plus 400/422/500)."""
    descriptions = {
        401: "Missing or unknown bearer token",
        403: "The token lacks the needed role",
        404: "No collection of that name",
        409: "Conflict (name taken, collection closed, or too few reports to release)",
        413: "Request body too large",
        429: "Upload limit reached: retry after the Retry-After header's seconds",
        503: "Database unavailable or full: retry later",
    }
    out = dict(PROBLEM_RESPONSES)
    for status in statuses:
        out[status] = _problem_entry(descriptions.get(status, "Problem"))
    return out
