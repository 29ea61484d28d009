"""Request body size limit: the reading that :mod:`ldp_aggregator.request_guard` applies
to every request.

A body is refused with ``413 payload-too-large`` when its ``Content-Length`` is over the
limit, or when the bytes actually received (chunked uploads) pass it. The body is read
completely before the application is called, so a refused request never reaches a
route: nothing is parsed and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import Response
from starlette.types import Message, Receive, Scope

from ldp_aggregator.problems import error_response
from ldp_shared.errors import PayloadTooLargeError


@dataclass(frozen=True)
class Refusal:
    """A body over the limit: what was declared or received."""

    what: str


async def read_limited_body(scope: Scope, receive: Receive, limit: int) -> bytes | Refusal | None:
    """The whole request body, a :class:`Refusal` once it passes ``limit`` bytes (declared
    or received), or ``None`` when the client left before sending all of it."""
    declared = _content_length(scope)
    if declared is not None and declared > limit:
        return Refusal(f"{declared} bytes declared")
    message = await receive()
    if message["type"] != "http.request":
        return None
    first: bytes = message.get("body", b"")
    if len(first) > limit:
        return Refusal(f"{len(first)} bytes received so far")
    if not message.get("more_body", False):
        return first  # the common case: one message, nothing to join
    chunks = [first]
    total = len(first)
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > limit:
            return Refusal(f"{total} bytes received so far")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` as one message, then defers to ``receive``."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def refusal_response(refusal: Refusal, limit: int) -> Response:
    """The ``413 payload-too-large`` problem document, closing the connection."""
    return error_response(
        PayloadTooLargeError,
        f"the request body ({refusal.what}) is over the limit of {limit} bytes",
        headers={"Connection": "close"},
    )


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
