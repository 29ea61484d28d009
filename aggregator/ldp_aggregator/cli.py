"""The aggregator's command line: ``serve`` the aggregator, ``migrate`` its database.

These commands, and the one-line error reporting of every ``ldpcollect`` command, live
here so that the aggregator needs nothing above itself: ``python -m ldp_aggregator.cli
serve`` is a complete server (the demo and the benchmarks start it that way). The
``ldpcollect`` console script is :mod:`ldp_simulation.cli`, which adds ``demo`` and
``simulate`` to these two; this module never imports it.

Errors are one readable line on stderr and a non-zero exit status, and so is a
command whose optional dependencies are not installed: it names the extra to install
(``serve`` and ``migrate`` need ``.[aggregator]``). Nothing beyond the core dependencies
is imported before a command runs, so ``--help`` works on any install.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ldp_aggregator.shuffler.cli import (
    SHUFFLER_COMMANDS,
    add_shuffler_commands,
    run_shuffler_command,
)
from ldp_shared.errors import ConfigurationError, LDPError

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ldp_aggregator.settings import Settings

PROG = "ldpcollect"
DESCRIPTION = "Collect data under local differential privacy."
SERVER_COMMANDS = ("serve", "migrate", "fold", *SHUFFLER_COMMANDS)
EXIT_ERROR = 2
SERVER_EXTRAS: Mapping[str, str] = {
    "serve": "aggregator",
    "migrate": "aggregator",
    "fold": "aggregator",
    "shuffle": "aggregator",
    "sealing-keys": "aggregator",
}
"""The extra (``pip install -e ".[extra]"``) each command of this module needs."""
OPTIONAL_MODULES = frozenset(
    {
        # the aggregator extra's distributions, by the name they are imported as
        "fastapi",
        "starlette",
        "uvicorn",
        "sqlalchemy",
        "alembic",
        "pydantic_settings",
        "httpx",
        "prometheus_client",
        "jinja2",
        "multipart",
        "python_multipart",
        "nats",
        "cryptography",
        # the demo extra's own
        "tqdm",
    }
)
"""Top-level modules that come with an extra: a command that fails to import one of them
is missing its extra, not broken."""

logger = logging.getLogger("ldp_aggregator")


def add_server_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add ``serve`` and ``migrate`` to a command line's sub-commands."""
    serve = commands.add_parser("serve", help="run the aggregator (FastAPI + uvicorn)")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--port", type=int, default=8000, help="TCP port to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: $LDPCOLLECT_DATABASE_URL or sqlite:///./ldpcollect.db)",
    )
    serve.add_argument(
        "--log",
        metavar="NATS_URL",
        help="log mode: publish uploads to this NATS JetStream cluster, e.g."
        " nats://h1:4222,h2:4222,h3:4222 (default: $LDPCOLLECT_LOG_URL, else direct mode;"
        " docs/log-mode.md)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        help="uvicorn worker processes (default: $LDPCOLLECT_WORKERS, else 1), each with its"
        " own group commit and upload limits. PostgreSQL is the multi-worker case; on SQLite"
        " they share the file (WAL) and take turns at its one write lock. More workers pay"
        " only with idle cores: bench/workers.py measures it",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default: %(default)s; the access log stays off)",
    )

    migrate = commands.add_parser(
        "migrate", help="create or upgrade the database schema (Alembic upgrade head) and exit"
    )
    migrate.add_argument("--database-url", help="SQLAlchemy URL (default as for serve)")

    fold = commands.add_parser(
        "fold", help="log mode: write the log's reports to the database in batches (a worker)"
    )
    fold.add_argument("--log", metavar="NATS_URL", help="the log (default: $LDPCOLLECT_LOG_URL)")
    fold.add_argument("--database-url", help="SQLAlchemy URL (default as for serve)")
    fold.add_argument(
        "--batch", type=int, default=10_000, help="messages per transaction (default: %(default)s)"
    )
    fold.add_argument(
        "--ack-wait",
        type=float,
        default=30.0,
        help="seconds before a dead worker's batch goes to another (default: %(default)s)",
    )
    fold.add_argument(
        "--metrics-port", type=int, default=0, help="serve /metrics on this port (0: off)"
    )
    add_shuffler_commands(commands)


def build_parser() -> argparse.ArgumentParser:
    """The aggregator's own command line: ``serve`` and ``migrate``."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_server_commands(parser.add_subparsers(dest="command", required=True))
    return parser


MAX_PORT = 65_535
WORKERS_PER_CORE = 4
WORKER_SETTINGS_VARIABLE = "LDPCOLLECT_SERVE_WORKER_SETTINGS"  # to the workers; not a setting


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


def _serve(args: argparse.Namespace) -> int:
    if not 1 <= args.port <= MAX_PORT:  # before anything else: nothing is touched
        raise ConfigurationError(f"--port must be from 1 to {MAX_PORT:,}, got {args.port}")
    if args.workers is not None:  # as the port: one line before anything is touched
        _check_workers("--workers", args.workers)
    given = _settings(args.database_url, args.log, args.workers)
    _check_workers("LDPCOLLECT_WORKERS", given.workers)
    import uvicorn

    from ldp_aggregator.app import create_app
    from ldp_aggregator.heap import retain_freed_memory
    from ldp_aggregator.storage.engine import check_sqlite_folder, make_engine, ping

    settings, generated = given.with_generated_tokens()
    if settings.log_url is not None:  # a bad or dead log is one line before anything starts
        from ldp_aggregator.ingest_log.stream import check_reachable, log_settings_of

        check_reachable(log_settings_of(settings))
    for warning in settings.weak_token_warnings():
        logger.warning("%s: warning: %s", PROG, warning)
    check_sqlite_folder(settings.database_url)
    engine = make_engine(settings.database_url)  # lazy: no file or connection yet
    try:
        check_listen_address(args.host, args.port)  # before the database is created
        ping(engine)  # a bad URL or an unreachable database is one line, not a traceback
        if settings.workers > 1 and settings.migrate_on_startup:
            from ldp_aggregator.storage.migrate import upgrade

            upgrade(engine)  # once, here: the workers must not race to migrate
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
    if settings.workers > 1:
        # each worker builds its app from these settings (worker_app): the tokens' digests
        # only, through the environment, never the command line, a file or a log
        kept = settings.without_plain_tokens().model_copy(update={"migrate_on_startup": False})
        os.environ[WORKER_SETTINGS_VARIABLE] = kept.model_dump_json()
        uvicorn.run(
            f"{__name__}:worker_app",
            factory=True,
            workers=settings.workers,
            host=args.host,
            port=args.port,
            log_level=args.log_level,
            access_log=False,
        )
        return 0
    retain_freed_memory()  # large statistics arrays reuse mapped pages (heap.py)
    app = create_app(settings)
    # The app and the modules it imported live as long as the process: frozen, they are
    # out of the cyclic collector's reach, so a full collection no longer walks some
    # 80,000 objects while requests wait (p99 of single-report uploads at 16 connections:
    # 80-117 ms before, 28-46 ms after, two runs each; bench/ingestion.py). No full
    # collection first: it found 40 unreachable objects among 130,000 and took 65-70 ms
    # of the start-up (idle machine), several times that under load
    gc.freeze()
    # no access log: it would record the client IP address of every report
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
    )
    return 0


def worker_app() -> FastAPI:
    """uvicorn's factory in each ``serve --workers N`` worker: the app of the settings that
    ``serve`` resolved (JSON in :data:`WORKER_SETTINGS_VARIABLE`, the tokens' digests
    only; migrations already ran), its freed memory retained and its objects frozen as in
    :func:`_serve`."""
    from ldp_aggregator.app import create_app
    from ldp_aggregator.heap import retain_freed_memory
    from ldp_aggregator.settings import Settings

    settings = Settings.model_validate_json(os.environ.pop(WORKER_SETTINGS_VARIABLE))
    retain_freed_memory()
    app = create_app(settings)
    gc.freeze()
    return app


def _settings(
    database_url: str | None, log_url: str | None = None, workers: int | None = None
) -> Settings:
    """The settings from the environment (and ``--database-url``, ``--log``, ``--workers``);
    a bad one is a :class:`ConfigurationError` naming its ``LDPCOLLECT_*`` variable."""
    from ldp_aggregator.settings import Settings

    given: dict[str, Any] = {"database_url": database_url, "log_url": log_url, "workers": workers}
    try:
        return Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as error:
        raise ConfigurationError(_settings_error(error)) from None


def _settings_error(error: ValidationError) -> str:
    first = error.errors()[0]
    message = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    if not first["loc"]:  # a check across several settings
        return f"invalid settings: {message}"
    return f"invalid setting LDPCOLLECT_{str(first['loc'][0]).upper()}: {message}"


def _migrate(args: argparse.Namespace) -> int:
    from ldp_aggregator.storage.engine import check_sqlite_folder, make_engine
    from ldp_aggregator.storage.migrate import current_revision, upgrade

    database_url = _settings(args.database_url).database_url
    check_sqlite_folder(database_url)
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        print(f"ldpcollect: database schema at revision {current_revision(engine)}")
    finally:
        engine.dispose()
    return 0


def run_server_command(args: argparse.Namespace) -> int:
    """Run ``serve`` or ``migrate`` as parsed by :func:`add_server_commands`."""
    if args.command == "serve":
        return _serve(args)
    if args.command == "migrate":
        return _migrate(args)
    if args.command in SHUFFLER_COMMANDS:
        return run_shuffler_command(args)
    if args.command == "fold":
        from ldp_aggregator.ingest_log.worker_cli import run_fold

        return run_fold(args, _settings(args.database_url, args.log))
    raise ValueError(f"not a server command: {args.command!r}")


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _missing_extra(command: str, extra: str | None, error: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install, when ``error`` is a missing optional module."""
    module = (error.name or "").partition(".")[0]
    if extra is None or module not in OPTIONAL_MODULES:
        return None
    return (
        f"{command} needs the {extra} extra ({module} is not installed):"
        f' pip install -e ".[{extra}]" (or "ldpcollect[{extra}]")'
    )


def _database_error(error: Exception) -> str | None:
    """One line for a database error, or ``None`` when ``error`` is not one.

    SQLAlchemy is imported only once a command uses it: an error can only be one of its
    errors if the module is loaded.
    """
    exc = sys.modules.get("sqlalchemy.exc")
    if exc is None or not isinstance(error, exc.SQLAlchemyError):
        return None
    cause = getattr(error, "orig", None) or error
    return f"database: {str(cause).strip().splitlines()[0]}"


def _validation_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"invalid {error.title}{' field ' + where if where else ''}: {first['msg']}"


def run_reporting_errors(
    command: Callable[[argparse.Namespace], int],
    args: argparse.Namespace,
    extras: Mapping[str, str] = SERVER_EXTRAS,
) -> int:
    """``command(args)``, with any expected error as one line on stderr and EXIT_ERROR.

    ``extras`` maps each sub-command to the extra it needs, for the line that names it
    when one of its optional modules is not installed.
    """
    try:
        return command(args)
    except LDPError as error:
        return _fail(error.detail)
    except ValidationError as error:  # settings are ConfigurationErrors by now
        return _fail(_validation_error(error))
    except ModuleNotFoundError as error:
        message = _missing_extra(args.command, extras.get(args.command), error)
        if message is None:
            raise
        return _fail(message)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        message = _database_error(error)
        if message is None:
            raise
        return _fail(message)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ldp_aggregator.cli serve|migrate``: run it, return the exit status."""
    return run_reporting_errors(run_server_command, build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
