"""Both clients say the same one line when nothing listens at the aggregator's address
(the async client once said "All connection attempts failed", the sync one
"[Errno 111] Connection refused")."""

from __future__ import annotations

import asyncio
import errno
import socket

import httpx
import pytest

from ldp_client import AsyncLDPClient, LDPClient
from ldp_client.unreachable import cannot_connect
from ldp_shared.errors import TransportError


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again on leaving: nothing listens


def test_both_clients_say_the_connection_was_refused() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    expected = f"cannot connect to {url}: connection refused"

    with pytest.raises(TransportError) as sync_info, LDPClient(url, retries=0) as client:
        client.get_config("survey")

    async def ask() -> None:
        async with AsyncLDPClient(url, retries=0) as client:
            await client.get_config("survey")

    with pytest.raises(TransportError) as async_info:
        asyncio.run(ask())
    assert str(sync_info.value).startswith(expected)
    assert str(async_info.value) == str(sync_info.value)


def test_the_socket_error_is_found_in_a_group_and_a_name_that_does_not_resolve() -> None:
    request = httpx.Request("GET", "http://agg.example:8000/v1/collections")
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")
    try:
        try:
            raise ExceptionGroup("attempts", [refused])
        except ExceptionGroup as group:
            raise OSError("All connection attempts failed") from group
    except OSError as summary:
        wrapped = httpx.ConnectError("All connection attempts failed")
        wrapped.__cause__ = summary
    assert cannot_connect(request, wrapped).startswith(
        "cannot connect to http://agg.example:8000: connection refused"
    )
    unresolved = httpx.ConnectError("[Errno -2] Name or service not known")
    unresolved.__cause__ = socket.gaierror(-2, "Name or service not known")
    assert cannot_connect(request, unresolved).startswith(
        "cannot connect to http://agg.example:8000: the host name cannot be resolved"
        " (Name or service not known); "
    )
    unreachable = httpx.ConnectError("x")
    unreachable.__cause__ = OSError(errno.EHOSTUNREACH, "No route to host")
    assert cannot_connect(request, unreachable) == (
        "cannot connect to http://agg.example:8000: no route to the host;"
        " GET http://agg.example:8000/v1/collections was not sent"
    )
