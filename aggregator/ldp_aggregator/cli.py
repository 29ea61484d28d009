"""The aggregator's command line: ``serve`` the aggregator, ``migrate`` its database.

These commands, and the one-line error reporting of every ``ldpcollect`` command, live
here so that the aggregator needs nothing above itself: ``python -m ldp_aggregator.cli
serve`` is a complete server (the demo and the benchmarks start it that way). The
``ldpcollect`` console script is :mod:`ldp_simulation.cli`, which adds ``demo`` and
``simulate`` to these two; this module never imports it. ``serve`` itself is
:mod:`ldp_aggregator.serve_cli`, ``fold`` :mod:`ldp_aggregator.ingest_log.worker_cli`.

Errors are one readable line on stderr and a non-zero exit status, and so is a
command whose optional dependencies are not installed: it names the extra to install
(``serve`` and ``migrate`` need ``.[aggregator]``). Nothing beyond the core dependencies
is imported before a command runs, so ``--help`` works on any install.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping, Sequence

from pydantic import ValidationError

from ldp_aggregator.shuffler.cli import (
    SHUFFLER_COMMANDS,
    add_shuffler_commands,
    run_shuffler_command,
)
from ldp_shared.errors import LDPError

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
        "--batch",
        type=int,
        default=10_000,
        help="reports per transaction at most (a message of more is one of its own), and"
        " about as many fetched at a time (default: %(default)s)",
    )
    fold.add_argument(
        "--ack-wait",
        type=float,
        default=30.0,
        help="seconds before a dead worker's batch goes to another (default: %(default)s)",
    )
    fold.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="serve /metrics at this port, 1 to 65535 (default: 0, off)",
    )
    fold.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="the address /metrics listens on (default: %(default)s; 0.0.0.0 in a container"
        " that a scraper reaches from outside)",
    )
    add_shuffler_commands(commands)


def build_parser() -> argparse.ArgumentParser:
    """The aggregator's own command line: ``serve`` and ``migrate``."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_server_commands(parser.add_subparsers(dest="command", required=True))
    return parser


def _migrate(args: argparse.Namespace) -> int:
    from ldp_aggregator.settings import settings_from
    from ldp_aggregator.storage.engine import check_sqlite_folder, make_engine
    from ldp_aggregator.storage.migrate import current_revision, upgrade

    database_url = settings_from(args.database_url).database_url
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
        from ldp_aggregator.serve_cli import serve

        return serve(args)
    if args.command == "migrate":
        return _migrate(args)
    if args.command in SHUFFLER_COMMANDS:
        return run_shuffler_command(args)
    if args.command == "fold":
        from ldp_aggregator.ingest_log.worker_cli import run_fold
        from ldp_aggregator.settings import settings_from

        return run_fold(args, settings_from(args.database_url, args.log))
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
