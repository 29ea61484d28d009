"""Request body size limit: a pure ASGI middleware.

A body is refused with ``413 payload-too-large`` when its ``Content-Length`` is over the
limit, or when the bytes actually received (chunked uploads) pass it. The body is read
completely before the application is called, so a refused request never reaches a
route: nothing is parsed and nothing is written.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ldp_aggregator.problems import error_response
from ldp_shared.errors import PayloadTooLargeError


class BodySizeLimitMiddleware:
    """Refuse request bodies over ``max_body_bytes`` with a problem document."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        if max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._refuse(scope, receive, send, f"{declared} bytes declared")
            return
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its whole body
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_body_bytes:
                await self._refuse(scope, receive, send, f"{total} bytes received so far")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        response = error_response(
            PayloadTooLargeError,
            f"the request body ({what}) is over the limit of {self.max_body_bytes} bytes",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
