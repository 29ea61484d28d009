"""docker-compose.yml publishes the aggregator to the host, one port per replica, as the
README says: before, ``docker compose up`` left the API and the dashboard unreachable."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_replica_of_the_aggregator_gets_a_host_port_on_loopback() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    aggregator = compose["services"]["aggregator"]
    assert "--port" in aggregator["command"]
    port = aggregator["command"][aggregator["command"].index("--port") + 1]
    (published,) = aggregator["ports"]
    host, ports, container = published.split(":")
    first, last = (int(p) for p in ports.split("-"))
    assert host == "127.0.0.1" and container == port
    assert last - first + 1 == aggregator["deploy"]["replicas"]  # one host port each
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"http://localhost:{p}" in readme for p in range(first, last + 1))
