"""The log's connection warns when a node is lost, and not when this process closes it
(every stop of a fold worker or a replica used to log "log connection lost")."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from ldp_aggregator.ingest_log.stream import LogSettings, connect

from .cluster import nats_cluster
from .conftest import require_nats_server

LOST = "log connection lost; reconnecting to another node"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("node_killed", [False, True])
def test_lost_is_said_of_a_lost_node_only(
    node_killed: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    require_nats_server()

    with nats_cluster(tmp_path / "nats", 1) as cluster:

        async def session() -> None:
            client = await connect(LogSettings(servers=(cluster.url,)), "test")
            if node_killed:
                cluster.kill(0)
                for _ in range(100):  # the client notices the closed socket
                    if client.is_reconnecting:
                        break
                    await asyncio.sleep(0.05)
            await client.close()

        with caplog.at_level(logging.WARNING, logger="ldp_aggregator"):
            asyncio.run(session())
    assert (LOST in _warnings(caplog)) is node_killed, _warnings(caplog)
