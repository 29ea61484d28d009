"""``serve``'s HTTP protocol sets ``TCP_NODELAY`` on connections accepted from the socket
uvicorn binds for ``--workers N``, where asyncio does not (that socket says protocol 0);
uvicorn's own protocol on the same socket is the control. uvloop, which serves where it is
installed, sets it on every connection itself."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import uvicorn
import uvloop
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.server import ServerState

from ldp_aggregator.serve_cli import NoDelayHTTP


async def _app(scope: Any, receive: Any, send: Any) -> None:  # never called here
    raise AssertionError("no request is sent")


async def _accepted_nodelay(protocol: Any) -> int:
    config = uvicorn.Config(_app, host="127.0.0.1", port=0, http=protocol, log_level="warning")
    config.load()
    listener = config.bind_socket()  # as for --workers N: socket.socket(family=AF_INET)
    assert listener.proto == 0
    state = ServerState()

    def made() -> asyncio.Protocol:
        made_protocol: asyncio.Protocol = config.http_protocol_class(
            config=config, server_state=state, app_state={}
        )
        return made_protocol

    server = await asyncio.get_running_loop().create_server(made, sock=listener)
    _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
    try:
        for _ in range(100):
            if state.connections:
                break
            await asyncio.sleep(0.01)
        [connection] = state.connections
        accepted = connection.transport.get_extra_info("socket")
        return int(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    finally:
        writer.close()
        server.close()


@pytest.mark.parametrize(("protocol", "nodelay"), [(NoDelayHTTP, 1), (AutoHTTPProtocol, 0)])
def test_a_workers_connection_sends_without_delay(protocol: Any, nodelay: int) -> None:
    assert asyncio.run(_accepted_nodelay(protocol)) == nodelay


@pytest.mark.parametrize("protocol", [NoDelayHTTP, AutoHTTPProtocol])
def test_uvloop_sends_without_delay_whatever_the_protocol(protocol: Any) -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(_accepted_nodelay(protocol)) == 1
