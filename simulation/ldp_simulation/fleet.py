"""What every part of the demo shares: its options, a real aggregator, a fleet of clients.

* :func:`running_aggregator` starts the aggregator's own command line
  (``python -m ldp_aggregator.cli serve``) in a subprocess on a free loopback port and
  stops it when the block ends; the server process never loads this package.
  :func:`aggregator_process` does the same and yields the process itself (the benchmarks
  measure it and keep its log).
* :func:`deal_records` plays one simulated client per record: the SDK privatizes each
  record on the "device" and uploads the reports over HTTP, batch by batch, dealing the
  batches to one or more aggregators in turn as a load balancer would.
* :func:`ensure_collection` and :func:`replicate` prepare a collection and its records;
  :func:`report_records` creates the collection, deals its records and waits until the
  aggregator counts every report it acknowledged (:func:`wait_counted`: in log mode the
  fold workers write the statistics seconds after the uploads are answered).
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx
import numpy as np

from ldp_client import LDPClient
from ldp_shared.errors import CollectionNotFoundError, ConflictError, TransportError
from ldp_shared.rand import seeded_rng
from ldp_shared.schema import CollectionSpec
from ldp_simulation.progress import Progress

SERVER_START_TIMEOUT = 60.0
ANALYSIS_TIMEOUT = 60.0
"""The demos' analyst requests: heavy-hitter discovery and mining take seconds of server
CPU, several times that on a loaded machine (the SDK's default is 10 s)."""
COUNT_TIMEOUT = 300.0
"""How long :func:`wait_counted` waits for the aggregator to count acknowledged reports."""

T = TypeVar("T")


@dataclass(frozen=True)
class DemoOptions:
    """The options of ``ldpcollect demo`` and ``ldpcollect simulate``."""

    epsilon: float = 4.0
    clients: int = 100_000
    mechanism: str = "oue"
    confidence: float = 0.95
    seed: int | None = None
    batch_size: int = 1000
    budget: str = "sample"  # how the naive Bayes and Adult collections spend ε: "split"/"sample"
    fresh: bool = False  # simulate --fresh: delete each demo collection first, then create it


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class AggregatorProcess:
    """A running ``ldpcollect serve`` subprocess (see :func:`aggregator_process`)."""

    process: subprocess.Popen[bytes]
    base_url: str
    command: list[str]
    """Its command line; the database URL and the tokens are in its environment."""


@contextmanager
def aggregator_process(
    database_url: str,
    admin_token: str,
    analyst_token: str,
    *,
    log_level: str = "warning",
    log_path: Path | None = None,
) -> Iterator[AggregatorProcess]:
    """Run ``ldpcollect serve`` in a subprocess until the block ends, once it is ready.

    Its output goes to ``log_path`` (stdout and stderr) when one is given; otherwise
    stdout is dropped and stderr kept to explain a failed start. A server that exits
    during start-up, or is not ready after :data:`SERVER_START_TIMEOUT` seconds, raises
    :class:`~ldp_shared.errors.TransportError`. On exit it is terminated (killed after
    10 s).
    """
    port = free_port()
    env = dict(os.environ)
    env["LDPCOLLECT_DATABASE_URL"] = database_url
    env["LDPCOLLECT_ADMIN_TOKEN"] = admin_token
    env["LDPCOLLECT_ANALYST_TOKEN"] = analyst_token
    # a simulated fleet sends a day's reports in seconds, far over a real fleet's rate:
    # the server it starts has no upload limit unless the environment sets one
    env.setdefault("LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION", "0")
    command = [
        sys.executable,
        "-m",
        "ldp_aggregator.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        log_level,
    ]
    with ExitStack() as stack:
        if log_path is None:
            output: int | IO[bytes] = subprocess.DEVNULL
            errors: int | IO[bytes] = subprocess.PIPE
        else:
            output, errors = stack.enter_context(log_path.open("wb")), subprocess.STDOUT
        process = subprocess.Popen(command, env=env, stdout=output, stderr=errors)
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base_url, process, log_path)
            yield AggregatorProcess(process, base_url, command)
        finally:
            stop_process(process)


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Terminate a server subprocess; kill it if it is still running after ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_aggregator(database_url: str, admin_token: str, analyst_token: str) -> Iterator[str]:
    """Run ``ldpcollect serve`` in a subprocess until the block ends; yields its base URL."""
    with aggregator_process(database_url, admin_token, analyst_token) as server:
        yield server.base_url


def _startup_output(process: subprocess.Popen[bytes], log_path: Path | None) -> str:
    if log_path is not None:
        return log_path.read_text(errors="replace")
    return process.stderr.read().decode(errors="replace") if process.stderr else ""


def wait_ready(
    base_url: str,
    process: subprocess.Popen[bytes],
    log_path: Path | None,
    what: str = "the aggregator",
) -> None:
    """Return once ``GET {base_url}/readyz`` answers 200; raise
    :class:`~ldp_shared.errors.TransportError` if ``what`` exits or is not ready in time."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = _startup_output(process, log_path)
            last = output.strip().splitlines()[-1] if output.strip() else "no output"
            error = TransportError(f"{what} exited during start-up: {last}")
            if log_path is not None:
                error.add_note(output[-4000:])
            raise error
        try:
            if httpx.get(f"{base_url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TransportError(f"{what} at {base_url} was not ready after {SERVER_START_TIMEOUT}s")


def replicate(records: list[T], clients: int) -> list[T]:
    """Whole copies of the data set, enough for at least ``clients`` clients."""
    return records * max(1, math.ceil(clients / len(records)))


def ensure_collection(admin: LDPClient, spec: CollectionSpec, *, fresh: bool = False) -> None:
    """Create the collection, or accept an existing one with exactly this spec (its reports
    then add to those of earlier runs). ``fresh``: delete an existing one first, with all
    its reports, models and jobs (admin token)."""
    if fresh:
        with suppress(CollectionNotFoundError):
            admin.delete_collection(spec.name, confirm=spec.name)
    try:
        admin.create_collection(spec)
    except ConflictError:
        existing = admin.get_config(spec.name)
        if existing.spec != spec:
            raise ConflictError(
                f"collection {spec.name!r} exists with another configuration"
                " (--fresh deletes it and creates it again)"
            ) from None


def report_records(
    base_urls: Sequence[str],
    admin_token: str,
    spec: CollectionSpec,
    records: Sequence[dict[str, Any]],
    options: DemoOptions,
    progress: Progress | None = None,
    seed_offset: int = 0,
) -> None:
    """Create (or accept) the collection, then one client's report per record
    (:func:`deal_records`), then wait until the aggregator counts them
    (:func:`wait_counted`); the clients' noise is seeded from ``options.seed + seed_offset``
    when the options carry a seed."""
    rng = None if options.seed is None else seeded_rng(options.seed + seed_offset)
    with LDPClient(base_urls[0], token=admin_token) as admin:
        ensure_collection(admin, spec, fresh=options.fresh)
        before = admin.collection_status(spec.name).n_reports
        accepted = deal_records(base_urls, spec.name, records, rng, options.batch_size, progress)
        wait_counted(admin, spec.name, before + accepted, progress)


def wait_counted(
    admin: LDPClient,
    collection: str,
    expected: int,
    progress: Progress | None = None,
    timeout: float = COUNT_TIMEOUT,
) -> None:
    """Return once ``collection`` counts at least ``expected`` reports: at once in direct
    mode (a report is counted before it is acknowledged); in log mode when the fold
    workers have caught up. :class:`TimeoutError` naming the shortfall after ``timeout``."""
    deadline = time.monotonic() + timeout
    while (counted := admin.collection_status(collection).n_reports) < expected:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{collection}: the aggregator counts {counted:,} of the {expected:,}"
                f" reports it acknowledged after {timeout:g} s; are the fold workers running?"
            )
        if progress is not None:
            progress.count(f"{collection}: reports counted (folding)", counted, expected)
        time.sleep(0.2)


def deal_records(
    base_urls: Sequence[str],
    collection: str,
    records: Sequence[dict[str, Any]],
    rng: np.random.Generator | None,
    batch_size: int,
    progress: Progress | None = None,
) -> int:
    """Upload one client's report per record, dealing the batches to the aggregators in
    turn; the number of reports the aggregators accepted as new."""
    total = len(records)
    sent = 0
    accepted = 0

    def on_batch(count: int) -> None:
        nonlocal sent
        sent += count
        if progress is not None:
            progress.count(f"{collection}: clients reporting", sent, total)

    clients = [LDPClient(url, rng=rng) for url in base_urls]
    try:
        for turn, start in enumerate(range(0, total, batch_size)):
            summary = clients[turn % len(clients)].submit(
                collection,
                records[start : start + batch_size],
                batch_size=batch_size,
                progress=on_batch,
            )
            accepted += summary.accepted
    finally:
        for client in clients:
            client.close()
    return accepted
