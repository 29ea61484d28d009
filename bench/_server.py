"""A real aggregator for the HTTP benchmarks: ``ldpcollect serve`` in a subprocess.

Loopback only: the server is the simulation's
(:func:`ldp_simulation.fleet.aggregator_process`: 127.0.0.1 on a free port, stopped
when the benchmark that started it is done), with a temporary SQLite file (or a
database URL: :func:`postgres_database` makes a fresh PostgreSQL one), fresh random
tokens and its output in a log file. :func:`running_noop_server` serves
``bench/_noop_app.py``, the yardstick of ``bench/ingestion.py``, the same way.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from _numeric import numeric_attribute
from ldp_shared.codec import Privatizer
from ldp_shared.collection import CollectionConfig
from ldp_shared.schema import AttributeSpec, CollectionSpec
from ldp_shared.wire.reports import encode_bits, new_report_id
from ldp_simulation.fleet import (
    AggregatorProcess,
    aggregator_process,
    free_port,
    stop_process,
    wait_ready,
)

BENCH_DIR = Path(__file__).resolve().parent


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
def running_server(
    log_level: str = "warning",
    database_url: str | None = None,
    tokens: tuple[str, str] | None = None,
) -> Iterator[Server]:
    """Start ``ldpcollect serve`` on a free loopback port; stop it on exit.

    Its database is a temporary SQLite file unless ``database_url`` names one (several
    replicas of one PostgreSQL database: pass them the same ``tokens``, admin and analyst).
    """
    with tempfile.TemporaryDirectory(prefix="ldp-bench-") as tmp:
        database = Path(tmp) / "bench.db"
        database_url = database_url or f"sqlite:///{database}"
        admin_token, analyst_token = tokens or (
            secrets.token_urlsafe(24),
            secrets.token_urlsafe(24),
        )
        log_path = Path(tmp) / "server.log"
        with aggregator_process(
            database_url, admin_token, analyst_token, log_level=log_level, log_path=log_path
        ) as running:
            # recorded in the results without this machine's paths
            command = [f"LDPCOLLECT_DATABASE_URL={database_url}", *running.command]
            command[1] = Path(command[1]).name
            yield Server(
                process=running.process,
                base_url=running.base_url,
                admin_token=admin_token,
                analyst_token=analyst_token,
                database=database,
                command=[a.replace(tmp, "<temporary folder>") for a in command],
                log_path=log_path,
            )


@contextmanager
def running_noop_server(log_level: str = "warning") -> Iterator[AggregatorProcess]:
    """Serve ``bench/_noop_app.py`` as the aggregator is served (uvicorn, one process,
    127.0.0.1, no access log, ``log_level``); stop it on exit."""
    port = free_port()
    app = [sys.executable, "-m", "uvicorn", "--app-dir", str(BENCH_DIR), "_noop_app:app"]
    options = ["--host", "127.0.0.1", "--port", str(port), "--log-level", log_level]
    command = [*app, *options, "--no-access-log"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url, process, None, what="the no-op app")
        shown = ["python", *command[1:4], "bench", *command[5:]]  # without this machine's paths
        yield AggregatorProcess(process, base_url, shown)
    finally:
        stop_process(process)


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database ``ldpbench_<random hex>`` on the server of
    ``admin_url`` (a database the user may connect to), dropped on exit; yields its URL."""
    name = f"ldpbench_{secrets.token_hex(6)}"
    url = make_url(admin_url)
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield url.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def bench_spec(
    name: str, mechanism: str = "oue", epsilon: float = 4.0, min_reports: int = 100
) -> CollectionSpec:
    """The benchmarks' one-attribute collection ``v``: OUE over 16 values (``"oue"``), or a
    number in [0, 100] with any registered numeric ``mechanism`` (released as a mean)."""
    if mechanism == "oue":
        return oue16_spec(name, epsilon, min_reports)
    return CollectionSpec(
        name=name,
        attributes=[numeric_attribute(mechanism, 0.0, 100.0, name="v")],
        epsilon=epsilon,
        release={"min_reports": min_reports},
    )


def release_route(config: CollectionConfig) -> str:
    """``frequencies`` or ``means``: the endpoint that releases the attribute ``v``."""
    spec = config.spec_of(config.attributes[0])
    return "means" if spec.released_as == "mean" else "frequencies"


def bench_column(config: CollectionConfig, n: int, rng: np.random.Generator) -> list[Any]:
    """``n`` raw values of the attribute: uniform domain strings, or uniform numbers."""
    attribute = config.attributes[0]
    if attribute.domain is None:
        spec = config.spec_of(attribute)
        lo, hi = getattr(spec, "lo"), getattr(spec, "hi")  # noqa: B009 (numeric specs)
        values: list[Any] = rng.uniform(lo, hi, size=n).tolist()
        return values
    return [attribute.domain[i] for i in rng.integers(0, len(attribute.domain), size=n)]


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
    column = bench_column(config, n, rng)
    packed = Privatizer(config).privatize_columns({attribute.name: column}, rng=rng)
    head = '{"id":"%s","config_hash":"' + config.config_hash + '","bits":"%s"}'
    bodies: list[bytes] = []
    for start in range(0, n, batch):
        rows = packed[start : start + batch]
        items = [head % (new_report_id(), encode_bits(row.tobytes())) for row in rows]
        bodies.append(('{"reports":[' + ",".join(items) + "]}").encode("ascii"))
    return bodies
