"""The body size limit as the app applies it (:class:`RequestGuardMiddleware`): declared
and streamed sizes, the exact count in the problem's detail, nothing reaching the app.

:class:`Recorder` and :func:`run` are shared with ``test_request_guard.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from ldp_aggregator.limits import Refusal, read_limited_body
from ldp_aggregator.metrics import Metrics
from ldp_aggregator.request_guard import RequestGuardMiddleware

LIMIT = 10


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
    """Send ``chunks`` as one POST's body through ``app``; the messages it answered."""
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


def guard(inner: Any, limit: int = LIMIT) -> RequestGuardMiddleware:
    return RequestGuardMiddleware(inner, Metrics(), limit)


def problem_of(sent: list[Message]) -> dict[str, Any]:
    """The 413 problem document answered, checked to close the connection."""
    assert sent[0]["status"] == 413
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"application/problem+json"
    assert headers[b"connection"] == b"close"
    problem: dict[str, Any] = json.loads(sent[1]["body"])
    assert problem["type"].endswith("/payload-too-large") and problem["status"] == 413
    return problem


def test_under_the_limit_the_streamed_body_is_replayed_whole() -> None:
    inner = Recorder()
    sent = run(guard(inner), [b"abc", b"def", b"ghij"])  # exactly the limit
    assert inner.bodies == [b"abcdefghij"]
    assert sent[0]["status"] == 204


def test_streamed_bytes_over_the_limit_are_refused_with_the_count_received() -> None:
    inner = Recorder()
    sent = run(guard(inner), [b"abcdef", b"ghijk"])
    assert inner.bodies == []
    # the bytes actually received (11), not those before the last chunk (6, under the limit)
    assert "(11 bytes received so far)" in problem_of(sent)["detail"]
    assert f"limit of {LIMIT} bytes" in problem_of(sent)["detail"]


def test_one_chunk_over_the_limit_is_refused() -> None:
    inner = Recorder()
    sent = run(guard(inner), [b"x" * (LIMIT + 1)])
    assert inner.bodies == []
    assert f"({LIMIT + 1} bytes received so far)" in problem_of(sent)["detail"]


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    inner = Recorder()
    received: list[Message] = []

    async def receive() -> Message:  # pragma: no cover - must not be called
        message: Message = {"type": "http.request", "body": b"x", "more_body": False}
        received.append(message)
        return message

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"11")]}
    asyncio.run(guard(inner)(scope, receive, send))
    assert inner.bodies == [] and received == []
    assert "(11 bytes declared)" in problem_of(sent)["detail"]


def test_a_declared_length_under_the_limit_does_not_excuse_the_bytes_sent() -> None:
    inner = Recorder()
    sent = run(guard(inner), [b"abcdef", b"ghijk"], [(b"content-length", b"3")])
    assert inner.bodies == []
    assert "(11 bytes received so far)" in problem_of(sent)["detail"]


def test_an_unreadable_content_length_falls_back_to_counting_bytes() -> None:
    inner = Recorder()
    sent = run(guard(inner), [b"abc"], [(b"content-length", b"many")])
    assert inner.bodies == [b"abc"] and sent[0]["status"] == 204
    refused = run(guard(Recorder()), [b"x" * (LIMIT + 1)], [(b"content-length", b"many")])
    assert refused[0]["status"] == 413


def test_the_reading_alone_answers_body_refusal_or_none() -> None:
    def read(chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> bytes | Refusal | None:
        messages: list[Message] = [
            {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
            for i, chunk in enumerate(chunks)
        ]

        async def receive() -> Message:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        scope = {"type": "http", "headers": headers}
        return asyncio.run(read_limited_body(scope, receive, LIMIT))

    assert read([b"ab", b"cd"], []) == b"abcd"
    assert read([b"ab", b"cd", b"efghijk"], []) == Refusal("11 bytes received so far")
    assert read([b"ab"], [(b"content-length", b"99")]) == Refusal("99 bytes declared")
    assert read([], []) is None  # a disconnect first


def test_client_gone_before_the_body_ends_reaches_nothing() -> None:
    inner = Recorder()
    messages: list[Message] = [{"type": "http.request", "body": b"ab", "more_body": True}]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    asyncio.run(guard(inner)(scope, receive, send))
    assert inner.bodies == [] and sent == []


@pytest.mark.parametrize("limit", [0, -1])
def test_the_limit_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        RequestGuardMiddleware(Recorder(), Metrics(), limit)


def test_a_limit_of_one_byte_takes_one_byte() -> None:
    assert run(guard(Recorder(), 1), [b"x"])[0]["status"] == 204
    assert run(guard(Recorder(), 1), [b"xy"])[0]["status"] == 413
