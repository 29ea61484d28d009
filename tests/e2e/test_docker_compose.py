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


def test_the_one_shot_services_succeed_on_fresh_volumes(tmp_path: Path) -> None:
    """The replicas wait for ``migrate`` and ``sealing-keys`` to complete successfully: run
    each one-shot command as the compose file gives it, on an empty database and an
    empty keys volume (``show`` there exits 2, which left every replica waiting)."""
    from ldp_aggregator.cli import main

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    waits = services["aggregator"]["depends_on"]
    one_shot = [name for name, v in waits.items() if v["condition"].endswith("successfully")]
    assert sorted(one_shot) == ["migrate", "sealing-keys"]
    keys = tmp_path / "keys" / "sealing-keys.json"
    arguments = {
        "migrate": ["--database-url", f"sqlite:///{tmp_path / 'fresh.db'}"],
        "sealing-keys": ["--file", str(keys)],
    }
    for name in one_shot:
        command = services[name]["command"]
        assert command[0] == "ldpcollect"
        assert main([*command[1:], *arguments[name]]) == 0, name
        assert main([*command[1:], *arguments[name]]) == 0, name  # and again on `up`
    assert keys.is_file()
