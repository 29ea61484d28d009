"""The body size middleware on its own: declared and streamed sizes, nothing reaches the app."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from ldp_aggregator.limits import BodySizeLimitMiddleware


class Recorder:
    """An ASGI app that records the body it read and answers 204."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def run(
    app: Any, chunks: list[bytes], headers: list[tuple[bytes, bytes]] | None = None
) -> list[Message]:
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers or []}
    asyncio.run(app(scope, receive, send))
    return sent


def test_under_the_limit_the_body_is_replayed_whole() -> None:
    inner = Recorder()
    sent = run(BodySizeLimitMiddleware(inner, 10), [b"abc", b"def", b"ghij"])
    assert inner.bodies == [b"abcdefghij"]
    assert sent[0]["status"] == 204


def test_streamed_bytes_over_the_limit() -> None:
    inner = Recorder()
    sent = run(BodySizeLimitMiddleware(inner, 10), [b"abcdef", b"ghijk"])
    assert inner.bodies == []
    assert sent[0]["status"] == 413
    problem = json.loads(sent[1]["body"])
    assert problem["type"].endswith("/payload-too-large") and problem["status"] == 413
    # the bytes actually received (11), not those before the last chunk (6, under the limit)
    assert "(11 bytes received so far)" in problem["detail"]


def test_declared_length_over_the_limit_is_refused_before_reading() -> None:
    inner = Recorder()
    sent = run(BodySizeLimitMiddleware(inner, 10), [b"x"], [(b"content-length", b"11")])
    assert inner.bodies == [] and sent[0]["status"] == 413


def test_client_gone_before_the_body_ends() -> None:
    inner = Recorder()
    messages: list[Message] = [{"type": "http.request", "body": b"ab", "more_body": True}]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    asyncio.run(BodySizeLimitMiddleware(inner, 10)(scope, receive, send))
    assert inner.bodies == [] and sent == []


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        BodySizeLimitMiddleware(Recorder(), 0)
