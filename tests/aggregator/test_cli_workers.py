"""``ldpcollect serve --workers 2`` as a subprocess: both workers answer ``/readyz``, take
the tokens ``serve`` generated, accept uploads, and each report is stored and counted
once; the plain tokens reach neither the workers nor a command line; a bad ``--workers``
is one line.

Which worker answered is not left to chance: the test holds one keep-alive connection
per worker, found by looking up which process holds the server's end of it
(``/proc/net/tcp`` and ``/proc/<pid>/fd``, so Linux only). It runs on the engine of
``tests/engines.py`` (a fresh PostgreSQL schema under ``LDPCOLLECT_TEST_ENGINE=postgresql``).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.aggregator.conftest import packed_reports, report_dicts, spec_payload
from tests.engines import database_url

from ldp_aggregator import serve_cli
from ldp_aggregator.cli import EXIT_ERROR, main
from ldp_aggregator.serve_cli import WORKER_SETTINGS_VARIABLE, max_workers, worker_app
from ldp_aggregator.settings import token_digest
from ldp_aggregator.storage.engine import make_engine
from ldp_aggregator.storage.migrate import current_revision
from ldp_shared.collection import CollectionConfig

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="finds each connection's worker in /proc"
)
START_TIMEOUT = 120.0
GENERATED = re.compile(r"no (admin|analyst) token configured; generated one for this run: (\S+)")
STARTED = re.compile(r"Started server process \[(\d+)\]")


def _free_port() -> int:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return int(free.getsockname()[1])


def _socket_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the server's end of the loopback connection from ``client_port``."""
    wanted_local, wanted_remote = f"{server_port:04X}", f"{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
        if local == wanted_local and remote == wanted_remote:
            return fields[9]
    return None


def _holder(pids: list[int], inode: str) -> int | None:
    """Which of ``pids`` holds the socket ``inode`` open."""
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


@dataclass
class Served:
    """A running ``serve --workers 2``: its port, generated tokens and worker pids."""

    process: subprocess.Popen[bytes]
    port: int
    tokens: dict[str, str]
    workers: list[int]
    log: Path

    def connection_to(self, worker: int, attempts: int = 200) -> http.client.HTTPConnection:
        """A keep-alive connection that ``worker`` accepted."""
        for _ in range(attempts):
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            connection.request("GET", "/readyz")  # answered: the connection was accepted
            response = connection.getresponse()
            assert response.status == 200, response.read()
            response.read()
            assert connection.sock is not None
            inode = _socket_inode(self.port, connection.sock.getsockname()[1])
            if inode is not None and _holder(self.workers, inode) == worker:
                return connection
            connection.close()
        raise AssertionError(f"worker {worker} accepted none of {attempts} connections")


def call(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    token: str | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """One request on a kept connection: its status and its body (JSON when it is)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    kind = response.getheader("content-type", "")
    return response.status, json.loads(raw) if "json" in kind else raw.decode()


def _wait_started(process: subprocess.Popen[bytes], log: Path, port: int) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()[-3000:]}")
        text = log.read_text()
        if len(STARTED.findall(text)) == 2 and "Application startup complete" in text:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return text
            except OSError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"serve --workers 2 not started in time: {log.read_text()[-3000:]}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """``serve --workers 2`` with no token configured (it generates both)."""
    env = {key: value for key, value in os.environ.items() if "TOKEN" not in key}
    env["LDPCOLLECT_DATABASE_URL"] = database_url(tmp_path / "workers.db")
    env["LDPCOLLECT_UPLOAD_RATE_PER_COLLECTION"] = "0"
    port = _free_port()
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "ldp_aggregator.cli", "serve", "--workers", "2"]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "--port", str(port), "--log-level", "info"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        text = _wait_started(process, log, port)
        tokens = dict(GENERATED.findall(text))
        workers = [int(pid) for pid in STARTED.findall(text)]
        assert set(tokens) == {"admin", "analyst"} and len(set(workers)) == 2
        yield Served(process, port, tokens, workers, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown
            process.kill()
            process.wait()


def _accepted(metrics: str, collection: str) -> int:
    pattern = (
        rf'^ldpcollect_reports_total\{{.*collection="{collection}".*status="accepted".*\}} (\S+)$'
    )
    found = re.search(pattern, metrics, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


def test_two_workers_answer_share_the_tokens_and_count_each_report_once(served: Served) -> None:
    first, second = (served.connection_to(worker) for worker in served.workers)
    admin, analyst = served.tokens["admin"], served.tokens["analyst"]

    status, created = call(first, "POST", "/v1/collections", admin, spec_payload("shared"))
    assert status == 201, created
    config = CollectionConfig.model_validate(created)
    # the other worker knows the collection and takes the generated admin token too
    status, shown = call(second, "GET", "/v1/collections/shared")
    assert status == 200 and shown["config_hash"] == config.config_hash
    assert call(second, "POST", "/v1/collections", admin, spec_payload("other"))[0] == 201
    assert call(first, "POST", "/v1/collections", "not-a-token", spec_payload("x"))[0] == 401

    batches = {first: report_dicts(config, packed_reports(config, 30, seed=1))}
    batches[second] = report_dicts(config, packed_reports(config, 50, seed=2))
    for connection, batch in batches.items():
        status, outcome = call(
            connection, "POST", "/v1/collections/shared/reports", body={"reports": batch}
        )
        assert status == 200 and outcome["accepted"] == len(batch), outcome
    # the same reports again, each through the other worker: stored once
    for connection, batch in zip((second, first), batches.values(), strict=True):
        status, outcome = call(
            connection, "POST", "/v1/collections/shared/reports", body={"reports": batch}
        )
        assert status == 200 and outcome["accepted"] == 0, outcome
        assert outcome["duplicate"] == len(batch)

    # each worker counted what it accepted, and only that
    for connection, batch in batches.items():
        status, metrics = call(connection, "GET", "/metrics")
        assert status == 200 and _accepted(metrics, "shared") == len(batch)
    for connection in (first, second):
        path = "/v1/collections/shared/frequencies?attribute=color"
        status, released = call(connection, "GET", path, analyst)
        assert status == 200 and released["n_reports"] == 80, released
        assert call(connection, "GET", path, "not-a-token")[0] == 401


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on ``port`` (``/proc/net/tcp``, state 0A)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].rsplit(":", 1)[1] == f"{port:04X}" and fields[3] == "0A":
            inodes.add(fields[9])
    return inodes


@pytest.mark.skipif(not serve_cli.BALANCED_LISTENERS, reason="SO_REUSEPORT spreads on Linux")
def test_each_worker_listens_on_a_socket_of_its_own(served: Served) -> None:
    """Two listening sockets, one held by each worker and not by the other nor the
    supervisor (uvicorn alone: one socket, held by all three); connections land on both."""
    # a worker binds its socket after its startup: the fixture saw one worker answer
    deadline = time.monotonic() + START_TIMEOUT
    while len(listening := _listening_inodes(served.port)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(listening) == 2, listening
    holders = {inode: _holder([served.process.pid, *served.workers], inode) for inode in listening}
    assert sorted(holders.values()) == sorted(served.workers), holders
    for inode, holder in holders.items():
        others = [pid for pid in [served.process.pid, *served.workers] if pid != holder]
        assert _holder(others, inode) is None
    accepted_by = []
    for _ in range(16):  # each worker takes any one with chance 1/2: all 16 on one, 2**-15
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as client:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.recv(64).startswith(b"HTTP/1.1")
            inode = _socket_inode(served.port, client.getsockname()[1])
            assert inode is not None
            accepted_by.append(_holder(served.workers, inode))
    assert set(accepted_by) == set(served.workers), accepted_by


def test_the_plain_tokens_reach_no_worker_and_no_command_line(served: Served) -> None:
    secrets_ = list(served.tokens.values())
    for pid in [served.process.pid, *served.workers]:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert not any(token in command_line for token in secrets_)
    for pid in served.workers:  # the environment the workers started with: digests only
        environment = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
        assert "LDPCOLLECT_SERVE_WORKER_SETTINGS" in environment
        assert not any(token in environment for token in secrets_)
    log = served.log.read_text()
    assert all(log.count(token) == 1 for token in secrets_)  # the line that shows it, once


@pytest.mark.parametrize("workers", ["0", "-2", str(10**6)])
def test_a_bad_worker_count_is_one_line_and_creates_nothing(
    workers: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "w.db"
    args = ["serve", "--workers", workers, "--database-url", f"sqlite:///{database}"]
    assert main(args) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert f"--workers must be from 1 to {max_workers()}" in captured.err
    assert f"got {workers}" in captured.err and not database.exists()


@pytest.mark.parametrize("binds", [True, False])
def test_a_worker_listens_on_its_own_socket_or_else_on_the_shared_one(
    binds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, uvicorn's serving replaced: the sockets a worker serves on."""
    from uvicorn.supervisors import multiprocess

    served: list[list[socket.socket] | None] = []
    monkeypatch.setattr(
        multiprocess.Process, "target", lambda self, sockets=None: served.append(sockets)
    )
    if not binds:

        def refused(shared: socket.socket) -> socket.socket:
            raise OSError("address in use")

        monkeypatch.setattr(serve_cli, "_own_listener", refused)
    worker = serve_cli.OwnListenerWorker.__new__(serve_cli.OwnListenerWorker)  # no process
    with socket.socket() as shared:
        shared.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        shared.bind(("127.0.0.1", 0))
        address = shared.getsockname()
        worker.target([shared])
        [sockets] = served
        assert sockets is not None and len(sockets) == 1
        if binds:  # a new socket at the same address, in a SO_REUSEPORT group; the copy closed
            [own] = sockets
            assert own is not shared and shared.fileno() == -1
            assert own.getsockname() == address
            assert own.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
            own.close()
        else:
            assert sockets == [shared] and shared.fileno() != -1


def test_an_unparsable_database_url_with_workers_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["serve", "--workers", "2", "--port", str(_free_port()), "--database-url", "::nope"]
    assert main(args) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "the database URL cannot be parsed" in captured.err


def test_a_bad_worker_setting_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "w.db"
    for value, expected in (("0", "LDPCOLLECT_WORKERS: "), ("many", "LDPCOLLECT_WORKERS: ")):
        monkeypatch.setenv("LDPCOLLECT_WORKERS", value)
        assert main(["serve", "--database-url", f"sqlite:///{database}"]) == EXIT_ERROR
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and expected in err
    monkeypatch.setenv("LDPCOLLECT_WORKERS", str(max_workers() + 1))
    assert main(["serve", "--database-url", f"sqlite:///{database}"]) == EXIT_ERROR
    assert f"LDPCOLLECT_WORKERS must be from 1 to {max_workers()}" in capsys.readouterr().err
    assert not database.exists()


@pytest.mark.parametrize(("workers", "warned"), [("2", True), ("1", False)])
def test_several_workers_on_sqlite_are_warned_against(
    workers: str,
    warned: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **options: None)
    monkeypatch.setattr(serve_cli, "_serving_app", lambda settings: None)  # no app needed
    monkeypatch.setenv(WORKER_SETTINGS_VARIABLE, "")  # restored (unset) after the test
    url = f"sqlite:///{tmp_path / 'w.db'}"
    with caplog.at_level(logging.WARNING, logger="ldp_aggregator"):
        args = ["serve", "--workers", workers, "--port", str(_free_port()), "--database-url", url]
        assert main(args) == 0
    said = [r.getMessage() for r in caplog.records if "SQLite" in r.getMessage()]
    assert said == (
        [
            "ldpcollect: warning: 2 workers on one SQLite file take turns at its one"
            " write lock and answer fewer uploads than one worker does; use PostgreSQL"
            " for several workers"
        ]
        if warned
        else []
    )


def test_serve_with_workers_migrates_first_and_hands_the_workers_digests_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process: ``uvicorn.run`` gets the factory's import string; the database is at its
    newest revision before any worker starts; the workers' settings are digests with
    migrations off; a worker's app takes the generated token and freezes the heap."""
    import gc

    import uvicorn

    served: list[tuple[object, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append((app, options)))
    for role in ("ADMIN", "ANALYST"):
        monkeypatch.delenv(f"LDPCOLLECT_{role}_TOKEN", raising=False)
        monkeypatch.delenv(f"LDPCOLLECT_{role}_TOKEN_SHA256", raising=False)
    monkeypatch.setenv(WORKER_SETTINGS_VARIABLE, "")  # restored (unset) after the test
    url = database_url(tmp_path / "w.db")
    assert (
        main(["serve", "--workers", "2", "--port", str(_free_port()), "--database-url", url]) == 0
    )
    [(app, options)] = served
    assert app == "ldp_aggregator.serve_cli:worker_app" and options["factory"] is True
    assert options["workers"] == 2 and options["access_log"] is False
    assert options["http"] is serve_cli.NoDelayHTTP  # TCP_NODELAY: test_serve_nodelay.py
    engine = make_engine(url)
    try:
        assert current_revision(engine) is not None  # migrated here, before the workers
    finally:
        engine.dispose()
    tokens = dict(GENERATED.findall(capsys.readouterr().err))
    handed = json.loads(os.environ[WORKER_SETTINGS_VARIABLE])
    assert handed["migrate_on_startup"] is False and handed["workers"] == 2
    assert handed["admin_token"] is None and handed["analyst_token"] is None
    assert handed["admin_token_sha256"] == token_digest(tokens["admin"])
    assert not any(token in os.environ[WORKER_SETTINGS_VARIABLE] for token in tokens.values())

    frozen: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append("freeze"))
    monkeypatch.setattr(serve_cli, "retain_freed_memory", lambda: frozen.append("retain") or True)
    worker = worker_app()
    assert frozen == ["retain", "freeze"] and WORKER_SETTINGS_VARIABLE not in os.environ
    state = worker.state.ldp
    assert state.tokens.role_of(tokens["analyst"]) == "analyst"
    assert state.settings.migrate_on_startup is False
    state.engine.dispose()


def test_one_worker_serves_the_app_in_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import uvicorn
    from fastapi import FastAPI

    served: list[tuple[object, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append((app, options)))
    retained: list[bool] = []
    monkeypatch.setattr(serve_cli, "retain_freed_memory", lambda: retained.append(True) or True)
    monkeypatch.setenv("LDPCOLLECT_ADMIN_TOKEN", "an-admin-token-long-enough")
    monkeypatch.setenv("LDPCOLLECT_ANALYST_TOKEN", "an-analyst-token-long-enough")
    url = f"sqlite:///{tmp_path / 'one.db'}"
    assert (
        main(["serve", "--workers", "1", "--port", str(_free_port()), "--database-url", url]) == 0
    )
    [(app, options)] = served
    assert isinstance(app, FastAPI) and "workers" not in options
    assert options["http"] is serve_cli.NoDelayHTTP
    assert retained == [True]  # before the app was built (ldp_aggregator/heap.py)
    engine = make_engine(url)
    try:
        assert current_revision(engine) is None  # the app migrates when it starts, as before
    finally:
        engine.dispose()
