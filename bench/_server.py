"""A real aggregator for the HTTP benchmarks: ``ldpcollect serve`` in a subprocess.

Loopback only: the server binds 127.0.0.1 on a free port, with a temporary SQLite file
and fresh random tokens, and is stopped (SIGTERM, then SIGKILL) by the benchmark that
started it.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np

from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire import encode_bits, new_report_id

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base_url: str
    admin_token: str
    analyst_token: str
    database: Path
    command: list[str]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def memory_kib(self) -> dict[str, int]:
        """VmHWM (peak resident set) and VmRSS of the server process, in KiB."""
        out: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
        return out

    def database_bytes(self) -> int:
        return sum(
            p.stat().st_size
            for p in self.database.parent.glob(self.database.name + "*")
            if p.is_file()
        )

    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def analyst(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.analyst_token}"}


@contextmanager
def running_server(log_level: str = "warning") -> Iterator[Server]:
    """Start ``ldpcollect serve`` on a free loopback port; stop it on exit."""
    with tempfile.TemporaryDirectory(prefix="ldp-bench-") as tmp:
        database = Path(tmp) / "bench.db"
        port = free_port()
        admin_token, analyst_token = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        env = {
            **os.environ,
            "LDPCOLLECT_ADMIN_TOKEN": admin_token,
            "LDPCOLLECT_ANALYST_TOKEN": analyst_token,
        }
        command = [
            sys.executable,
            "-m",
            "ldp_aggregator.cli",
            "serve",
            "--host",
            HOST,
            "--port",
            str(port),
            "--database-url",
            f"sqlite:///{database}",
            "--log-level",
            log_level,
        ]
        log_path = Path(tmp) / "server.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            server = Server(
                process=process,
                base_url=f"http://{HOST}:{port}",
                admin_token=admin_token,
                analyst_token=analyst_token,
                database=database,
                # recorded in the results without this machine's paths
                command=[
                    Path(command[0]).name,
                    *(a.replace(tmp, "<temporary folder>") for a in command[1:]),
                ],
                log_path=log_path,
            )
            try:
                _wait_ready(server)
                yield server
            finally:
                _stop(process)


def _wait_ready(server: Server, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"the aggregator exited with {server.process.returncode}:\n"
                + server.log_path.read_text(errors="replace")[-4000:]
            )
        try:
            if httpx.get(f"{server.base_url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the aggregator did not become ready within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


def oue16_spec(name: str, epsilon: float = 4.0, min_reports: int = 100) -> CollectionSpec:
    """One OUE attribute over 16 values."""
    return CollectionSpec(
        name=name,
        attributes=[
            AttributeSpec(name="v", domain=[f"value-{i:02d}" for i in range(16)], mechanism="oue")
        ],
        epsilon=epsilon,
        release={"min_reports": min_reports},
    )


def report_bodies(
    config: CollectionConfig, n: int, batch: int, rng: np.random.Generator
) -> list[bytes]:
    """JSON bodies of ``POST .../reports``, ``batch`` fresh perturbed reports each.

    Written by hand (the ``ReportBatch`` JSON layout: id, config_hash, base64 bits) so
    that building a million reports costs seconds; one body per batch.
    """
    attribute = config.attributes[0]
    values = rng.integers(0, attribute.d, size=n)
    column = [attribute.domain[i] for i in values]
    packed = Privatizer(config).privatize_columns({attribute.name: column}, rng=rng)
    head = '{"id":"%s","config_hash":"' + config.config_hash + '","bits":"%s"}'
    bodies: list[bytes] = []
    for start in range(0, n, batch):
        rows = packed[start : start + batch]
        items = [head % (new_report_id(), encode_bits(row.tobytes())) for row in rows]
        bodies.append(('{"reports":[' + ",".join(items) + "]}").encode("ascii"))
    return bodies
