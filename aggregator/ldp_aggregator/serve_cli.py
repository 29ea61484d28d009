"""``ldpcollect serve``: the aggregator under uvicorn, in this process or in ``--workers``
processes, each prepared to run long (:func:`_serving_app`).

Imported only when ``serve`` runs (:func:`ldp_aggregator.cli.run_server_command`), so it
may import the aggregator's extra at the top.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI
from sqlalchemy import Engine
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.supervisors import multiprocess

from ldp_aggregator.app import create_app
from ldp_aggregator.heap import retain_freed_memory
from ldp_aggregator.settings import Settings, settings_from
from ldp_aggregator.storage.engine import check_sqlite_folder, make_engine, ping
from ldp_shared.errors import ConfigurationError

logger = logging.getLogger("ldp_aggregator")

MAX_PORT = 65_535
WORKERS_PER_CORE = 4
WORKER_SETTINGS_VARIABLE = "LDPCOLLECT_SERVE_WORKER_SETTINGS"  # to the workers; not a setting


_HTTPProtocol: Any = AutoHTTPProtocol  # typed as type[asyncio.Protocol]: not a base for mypy


class NoDelayHTTP(_HTTPProtocol):  # type: ignore[misc]
    """uvicorn's own HTTP protocol (httptools or h11, as ``--http auto`` picks), with
    ``TCP_NODELAY`` set on every connection it is given.

    asyncio sets it on an accepted connection only when the listening socket says
    ``IPPROTO_TCP``; the socket uvicorn binds for ``--workers N`` says 0, so without this
    every answer written in two pieces waited for the client's delayed acknowledgement
    (Nagle's algorithm): about 40 ms a request. Two workers then served single reports at
    0.40x one worker's rate with the machine mostly idle (bench/workers.py, before and
    after in docs/benchmarks.md).

    uvloop, the loop uvicorn picks where it is installed (the aggregator's extra installs
    it except on Windows), sets ``TCP_NODELAY`` on every TCP connection itself; this class
    is what keeps asyncio's loop, where uvloop is absent, from waiting.
    """

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):  # a connection already gone
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


BALANCED_LISTENERS = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
"""Whether ``serve --workers N`` gives each worker a listening socket of its own (Linux
spreads the connections over a ``SO_REUSEPORT`` group; other kernels hand them all to one
socket of the group, so there the workers keep sharing uvicorn's one socket)."""


class OwnListenerWorker(multiprocess.Process):
    """A worker of uvicorn's supervisor that listens on a socket of its own.

    uvicorn binds one socket in the supervisor and every worker accepts from its one
    queue; asyncio accepts every waiting connection at each wake-up, so the first worker
    awake takes a burst of new keep-alive connections (wrk's 16, a fleet's reconnects)
    and keeps them. Measured: two workers kept using one core of two (0.92 cores, the
    machine 58 % busy; bench/workers.py). Here each worker binds the same address with
    ``SO_REUSEPORT`` and listens on its own queue; the kernel picks the queue of each new
    connection by a hash of its addresses and ports, so connections spread evenly over
    the workers. uvicorn has no option for it (its pull request 2472 is still open).
    The supervisor's socket stays bound and never listens: it holds the port between
    restarts, and a replacement worker binds beside it as the first did. A worker that
    stops takes its own queue with it: connections the kernel had queued there and the
    worker had not yet accepted are reset (the client retries), unless the kernel moves
    them to another worker of the group (``net.ipv4.tcp_migrate_req = 1``, Linux 5.14).
    """

    def target(self, sockets: list[socket.socket] | None = None) -> None:
        shared = sockets or []
        try:
            own = [_own_listener(listener) for listener in shared]
        except OSError as error:  # not expected once serve checked the port
            # the shared socket serves only while no other worker listens on a socket of
            # its own (beside one, listening on it fails too, and the worker exits)
            logger.warning("ldpcollect: worker accepts from the shared socket: %s", error)
            super().target(shared)
            return
        for listener in shared:  # this process's copies; the supervisor keeps its own
            listener.close()
        super().target(own)


def _own_listener(shared: socket.socket) -> socket.socket:
    """A new socket bound to ``shared``'s address in a ``SO_REUSEPORT`` group."""
    own = socket.socket(shared.family, shared.type)
    try:
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        own.bind(shared.getsockname())
    except OSError:
        own.close()
        raise
    return own


@contextlib.contextmanager
def own_listener_per_worker() -> Iterator[None]:
    """While uvicorn's supervisor runs, every worker it starts (the first ones, and the
    replacements of dead or restarted ones) is an :class:`OwnListenerWorker` (uvicorn's
    supervisor makes every worker through this one name)."""
    if not BALANCED_LISTENERS:
        yield
        return
    shared_listener = multiprocess.Process
    multiprocess.Process = OwnListenerWorker  # type: ignore[misc]
    try:
        yield
    finally:
        multiprocess.Process = shared_listener  # type: ignore[misc]


def check_listen_address(host: str, port: int) -> None:
    """:class:`ConfigurationError` (one line) unless ``host:port`` can be listened on now.

    ``serve`` checks it before it creates or migrates the database: a probe socket is
    bound and closed (as uvicorn binds: IPv6 for a host with a colon), so a port in use
    or a host that is not this machine's is one line, not a traceback.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            reason = error.strerror or str(error)
            raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None


def base_url(host: str, port: int) -> str:
    """``http://host:port`` as a browser takes it (an IPv6 host in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def max_workers() -> int:
    """The most ``serve --workers`` takes: four per CPU core this process may use."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return WORKERS_PER_CORE * (cores or 1)


def _check_workers(name: str, workers: int) -> None:
    if not 1 <= workers <= max_workers():
        raise ConfigurationError(
            f"{name} must be from 1 to {max_workers()} ({WORKERS_PER_CORE} per CPU core of"
            f" this machine), got {workers}"
        )


def serve(args: argparse.Namespace) -> int:
    """``ldpcollect serve``: check the port, the settings, the log (connected, its stream
    created unless it exists) and the database, then run uvicorn (``--workers`` processes,
    or the app in this one)."""
    if not 1 <= args.port <= MAX_PORT:  # before anything else: nothing is touched
        raise ConfigurationError(f"--port must be from 1 to {MAX_PORT:,}, got {args.port}")
    if args.workers is not None:  # as the port: one line before anything is touched
        _check_workers("--workers", args.workers)
    given = settings_from(args.database_url, args.log, args.workers)
    _check_workers("LDPCOLLECT_WORKERS", given.workers)

    settings, generated = given.with_generated_tokens()
    if settings.log_url is not None:
        # a bad or dead log, or a stream it cannot create (a single node asked for three
        # replicas, subjects another stream holds), is one line before anything starts,
        # not a traceback out of uvicorn's lifespan
        from ldp_aggregator.ingest_log.stream import check_log, log_settings_of

        check_log(log_settings_of(settings))
    for warning in settings.weak_token_warnings():
        logger.warning("ldpcollect: warning: %s", warning)
    check_sqlite_folder(settings.database_url)
    engine = make_engine(settings.database_url)  # lazy: no file or connection yet
    if settings.workers > 1 and engine.url.get_backend_name() == "sqlite":
        logger.warning(
            "ldpcollect: warning: %d workers on one SQLite file take turns at its one write"
            " lock and answer fewer uploads than one worker does; use PostgreSQL for several"
            " workers",
            settings.workers,
        )
    try:
        check_listen_address(args.host, args.port)  # before the database is created
        ping(engine)  # a bad URL or an unreachable database is one line, not a traceback
        if settings.migrate_on_startup and settings.workers > 1:
            from ldp_aggregator.storage.migrate import upgrade

            upgrade(engine)  # once, here: the workers must not race to migrate
        elif not settings.migrate_on_startup:
            _check_schema_left_to_migrate(engine)
    finally:
        engine.dispose()
    for role, token in generated.items():
        print(
            f"ldpcollect: no {role} token configured; generated one for this run: {token}",
            file=sys.stderr,
        )
    url = base_url(args.host, args.port)
    print(
        f"ldpcollect: serving at {url}: the dashboard at {url}/ui, the API's docs at"
        f" {url}/docs, ready when {url}/readyz answers",
        file=sys.stderr,
    )
    # no access log: it would record the client IP address of every report
    served: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": False,
        "http": NoDelayHTTP,
    }
    if settings.workers > 1:
        # each worker builds its app from these settings (worker_app): the tokens' digests
        # only, through the environment, never the command line, a file or a log
        kept = settings.without_plain_tokens().model_copy(update={"migrate_on_startup": False})
        os.environ[WORKER_SETTINGS_VARIABLE] = kept.model_dump_json()
        with own_listener_per_worker():
            uvicorn.run(f"{__name__}:worker_app", factory=True, workers=settings.workers, **served)
    else:
        uvicorn.run(_serving_app(settings), **served)
    return 0


def _check_schema_left_to_migrate(engine: Engine) -> None:
    """With migrations left to ``ldpcollect migrate``: a schema older than this code is
    served not ready (``/readyz`` 503 until the migration job has run: a replica may
    start before it finishes), with a warning; one a newer ldpcollect migrated is one
    line (this code may not write it as that one does)."""
    from ldp_aggregator.storage.migrate import schema_of

    schema = schema_of(engine)
    problem = schema.problem("this server")
    if problem is None:
        return
    if not schema.behind:
        raise ConfigurationError(problem)
    logger.warning("ldpcollect: warning: %s; /readyz answers 503 until then", problem)


def worker_app() -> FastAPI:
    """uvicorn's factory in each ``serve --workers N`` worker: the app of the settings that
    ``serve`` resolved (JSON in :data:`WORKER_SETTINGS_VARIABLE`, the tokens' digests
    only; migrations already ran), made as :func:`_serving_app` makes it."""
    return _serving_app(Settings.model_validate_json(os.environ.pop(WORKER_SETTINGS_VARIABLE)))


def _serving_app(settings: Settings) -> FastAPI:
    """The app a serving process runs, in a process prepared to run it long: freed memory
    kept in the heap, so large statistics arrays reuse mapped pages (``heap.py``); then
    the app and the modules it imported, which live as long as the process, frozen out of
    the cyclic collector's reach, so a full collection no longer walks some 80,000 objects
    while requests wait (p99 of single-report uploads at 16 connections: 80-117 ms before,
    28-46 ms after, two runs each; bench/ingestion.py). No full collection first: it found
    40 unreachable objects among 130,000 and took 65-70 ms of the start-up (idle machine),
    several times that under load."""
    retain_freed_memory()
    app = create_app(settings)
    gc.freeze()
    return app
