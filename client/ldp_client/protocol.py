"""The REST contract seen from the client, without I/O (shared by the sync and async clients).

* Endpoint builders (:func:`get_config_call`, :func:`submit_reports_call`, ...; the
  analyses' in :mod:`ldp_client.estimate_calls`, the others' beside their methods:
  :mod:`ldp_client.lifecycle`, :mod:`ldp_client.naive_bayes`, the lists'
  :mod:`ldp_client.listing`, ...) describe one
  exchange as an :class:`ApiCall`: method, path, query, body, whether it needs the
  token, whether it may be repeated, and how to parse a successful answer.
* :func:`interpret_response` and :func:`interpret_exception` turn what came back into a
  :class:`Success` or a :class:`Failure` carrying the typed ``ldp_shared.errors``
  exception to raise and whether another attempt may help.

The clients only send the request, sleep and loop (see :mod:`ldp_client.retry`); a
config that comes back is checked by :mod:`ldp_client.configs`.

Error mapping: an RFC 9457 problem document becomes the class that
:func:`~ldp_shared.errors.error_class_for_type` names for its ``type``, with the
server's ``detail`` as the message. Any other error answer is mapped by its HTTP
status. Connection failures and unreadable answers become
:class:`~ldp_shared.errors.TransportError` whose message names the URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeAlias, TypeVar
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from ldp_client.reports import ReportColumns
from ldp_client.retry import parse_retry_after
from ldp_client.unreachable import cannot_connect
from ldp_shared.collection import CollectionConfig
from ldp_shared.errors import (
    AuthenticationError,
    CollectionNotFoundError,
    ConflictError,
    InvalidRequestError,
    LDPError,
    MalformedRequestError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    TransportError,
    error_class_for_type,
    problem_type,
)
from ldp_shared.schema import COLLECTION_NAME_PATTERN, CollectionSpec
from ldp_shared.wire.reports import BatchResult, Report, ReportBatch

__all__ = [
    "ApiCall",
    "Failure",
    "Outcome",
    "PostProcess",
    "Success",
    "collection_path",
    "create_collection_call",
    "error_from_response",
    "get_config_call",
    "interpret_exception",
    "interpret_response",
    "submit_reports_call",
]

T = TypeVar("T")

PostProcess = Literal["none", "norm-sub", "simplex", "ibu"]

JSON = "application/json"
PROBLEM_JSON = "application/problem+json"

_COLLECTION_NAME = re.compile(COLLECTION_NAME_PATTERN)

# Error answers that are not problem documents (a proxy's page, a wrong base_url, ...).
_STATUS_FALLBACK: dict[int, type[LDPError]] = {
    400: MalformedRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
}

# Failures after which a non-idempotent request surely never reached the application.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_RETRYABLE_EXCEPTIONS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

_BODY_EXCERPT = 200


@dataclass(frozen=True)
class ApiCall(Generic[T]):
    """One REST exchange, described without doing it."""

    method: Literal["GET", "POST", "PUT", "DELETE"]
    path: str
    parse: Callable[[bytes], T]
    params: Mapping[str, str] | None = None
    body: bytes | None = None
    auth: bool = False
    idempotent: bool = True

    def build(self, http: httpx.Client | httpx.AsyncClient, token: str | None) -> httpx.Request:
        """The httpx request (built afresh for every attempt, with the same body)."""
        headers = {"Accept": f"{JSON}, {PROBLEM_JSON}"}
        if self.body is not None:
            headers["Content-Type"] = JSON
        if self.auth and token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return http.build_request(
            self.method,
            self.path,
            params=dict(self.params) if self.params else None,
            content=self.body,
            headers=headers,
        )


@dataclass(frozen=True)
class Success(Generic[T]):
    """A parsed successful answer."""

    value: T


@dataclass(frozen=True)
class Failure:
    """A failed attempt: the error to raise, and whether another attempt may succeed."""

    error: LDPError
    retryable: bool
    retry_after: float | None = None
    cause: BaseException | None = None


Outcome: TypeAlias = Success[T] | Failure


# --------------------------------------------------------------------------- endpoints


def collection_path(name: str) -> str:
    """``/v1/collections/{name}``; a name no collection can have is refused locally."""
    if not isinstance(name, str) or _COLLECTION_NAME.fullmatch(name) is None:
        raise CollectionNotFoundError(
            f"no collection can be named {name!r} (names match {COLLECTION_NAME_PATTERN})"
        )
    return f"/v1/collections/{quote(name, safe='')}"


def get_config_call(name: str) -> ApiCall[CollectionConfig]:
    """``GET /v1/collections/{name}``: the public config (check it with ``accept_config``)."""
    return ApiCall("GET", collection_path(name), CollectionConfig.model_validate_json)


def create_collection_call(spec: CollectionSpec) -> ApiCall[CollectionConfig]:
    """``POST /v1/collections`` (admin).

    Not idempotent (a repeat after a lost answer would be a conflict), so it is repeated
    only after failures that prove the request never reached the application.
    """
    return ApiCall(
        "POST",
        "/v1/collections",
        CollectionConfig.model_validate_json,
        body=spec.model_dump_json().encode("utf-8"),
        auth=True,
        idempotent=False,
    )


def _batch_parser(ids: list[str]) -> Callable[[bytes], BatchResult]:
    def parse(content: bytes) -> BatchResult:
        result = BatchResult.model_validate_json(content)
        answered = [outcome.id for outcome in result.outcomes]
        counts = (result.accepted, result.duplicate, result.rejected)
        statuses = [outcome.status for outcome in result.outcomes]
        expected = tuple(statuses.count(s) for s in ("accepted", "duplicate", "rejected"))
        if answered != ids or counts != expected:
            raise TransportError(
                "the aggregator's batch result does not match the batch that was sent"
            )
        return result

    return parse


def submit_reports_call(name: str, reports: Sequence[Report]) -> ApiCall[BatchResult]:
    """``POST /v1/collections/{name}/reports`` with one batch.

    Idempotent: the body, and so every report id, is fixed once, and the aggregator
    counts a repeated id once.
    """
    path = collection_path(name) + "/reports"
    if isinstance(reports, ReportColumns):  # made here: written from its matrices
        return ApiCall("POST", path, _batch_parser(reports.ids), body=reports.wire_json())
    batch = ReportBatch(reports=list(reports))
    return ApiCall(
        "POST",
        path,
        _batch_parser([report.id for report in batch.reports]),
        body=batch.model_dump_json().encode("utf-8"),
    )


def _where(request: httpx.Request) -> str:
    return f"{request.method} {request.url}"


def _excerpt(response: httpx.Response) -> str:
    text = response.content[:_BODY_EXCERPT].decode("utf-8", errors="replace")
    return text + ("…" if len(response.content) > _BODY_EXCERPT else "")


def _problem_document(response: httpx.Response) -> dict[str, Any] | None:
    content_type = response.headers.get("content-type", "")
    if "json" not in content_type:
        return None
    try:
        document = response.json()
    except ValueError:
        return None
    if isinstance(document, dict) and isinstance(document.get("type"), str):
        return document
    return None


def error_from_response(request: httpx.Request, response: httpx.Response) -> LDPError:
    """The typed error of an error answer (problem document or bare status)."""
    status = response.status_code
    problem = _problem_document(response)
    fallback = _STATUS_FALLBACK.get(status, TransportError)
    if problem is None:
        return fallback(
            f"{_where(request)} answered HTTP {status} without a problem document:"
            f" {_excerpt(response)!r}"
        )
    cls = error_class_for_type(problem["type"])
    if cls is LDPError and problem["type"] != problem_type(LDPError):
        cls = fallback  # "about:blank" or a type this SDK does not know
    detail = problem.get("detail") or problem.get("title") or f"HTTP {status}"
    error = cls(str(detail))
    error.add_note(f"{_where(request)} answered HTTP {status} ({problem['type']})")
    for item in problem.get("errors") or []:
        if isinstance(item, dict):
            error.add_note(f"  {item.get('loc')}: {item.get('msg')}")
    return error


def _retryable_status(status: int, idempotent: bool) -> bool:
    if idempotent:
        return status == 429 or 500 <= status <= 599
    # A non-idempotent request is repeated only when the server says it did not act.
    return status in (429, 503)


def interpret_response(
    call: ApiCall[T], request: httpx.Request, response: httpx.Response
) -> Outcome[T]:
    """A parsed 2xx answer, or the failure an error answer stands for."""
    status = response.status_code
    if 200 <= status <= 299:
        try:
            return Success(call.parse(response.content))
        except LDPError as error:
            error.add_note(f"{_where(request)} answered HTTP {status}")
            return Failure(error, retryable=False)
        except (ValidationError, ValueError) as error:
            return Failure(
                TransportError(
                    f"{_where(request)} answered HTTP {status} with an unreadable body:"
                    f" {_excerpt(response)!r}"
                ),
                retryable=False,
                cause=error,
            )
    if 300 <= status <= 399:
        return Failure(
            TransportError(
                f"{_where(request)} answered a redirect (HTTP {status}) to"
                f" {response.headers.get('location')!r}; use the final URL as base_url"
            ),
            retryable=False,
        )
    failed = error_from_response(request, response)
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    if isinstance(failed, RateLimitedError):
        failed.retry_after = retry_after
    return Failure(
        failed, retryable=_retryable_status(status, call.idempotent), retry_after=retry_after
    )


def interpret_exception(
    call: ApiCall[Any], request: httpx.Request, exc: httpx.HTTPError
) -> Failure:
    """The failure an httpx exception (no answer at all) stands for."""
    if call.idempotent:
        retryable = isinstance(exc, _RETRYABLE_EXCEPTIONS)
    else:
        retryable = isinstance(exc, _NOT_SENT)
    if isinstance(exc, httpx.ConnectError):
        error = TransportError(cannot_connect(request, exc))
    else:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
        error = TransportError(f"{_where(request)} {kind}: {type(exc).__name__}: {exc}")
    return Failure(error, retryable=retryable, cause=exc)
