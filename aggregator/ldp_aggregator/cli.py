"""The ``ldpcollect`` command line: ``serve`` the aggregator, run the ``demo``.

Errors are one readable line on stderr and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError

from ldp_shared.errors import AuthenticationError, LDPError

if TYPE_CHECKING:
    from ldp_aggregator.settings import Settings

EXIT_ERROR = 2


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _confidence(text: str) -> float:
    value = _positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ldpcollect", description="Collect data under local differential privacy."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the aggregator (FastAPI + uvicorn)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: $LDPCOLLECT_DATABASE_URL or sqlite:///./ldpcollect.db)",
    )
    serve.add_argument("--log-level", default="info")

    migrate = commands.add_parser(
        "migrate", help="create or upgrade the database schema (Alembic upgrade head) and exit"
    )
    migrate.add_argument("--database-url", help="SQLAlchemy URL (default as for serve)")

    demo = commands.add_parser("demo", help="simulate 100,000 clients against a real aggregator")
    simulate = commands.add_parser(
        "simulate", help="simulate a fleet of clients against running aggregators"
    )
    simulate.add_argument(
        "--url",
        action="append",
        required=True,
        help="an aggregator's base URL; repeat to deal batches to several replicas",
    )
    simulate.add_argument("--admin-token", default=os.environ.get("LDPCOLLECT_ADMIN_TOKEN"))
    simulate.add_argument("--analyst-token", default=os.environ.get("LDPCOLLECT_ANALYST_TOKEN"))
    for sub in (demo, simulate):
        sub.add_argument(
            "--epsilon", type=_positive_float, default=4.0, help="ε per record (default 4)"
        )
        sub.add_argument(
            "--clients", type=_positive_int, default=100_000, help="at least this many clients"
        )
        sub.add_argument("--mechanism", choices=["oue", "sue", "grr"], default="oue")
        sub.add_argument("--confidence", type=_confidence, default=0.95)
        sub.add_argument(
            "--budget",
            choices=["sample", "split"],
            default="sample",
            help="how the naive Bayes collection spends ε: one random feature per record"
            " with all of it (sample, the default) or ε/m on each of m features (split)",
        )
        sub.add_argument(
            "--seed", type=int, default=None, help="seed the clients' noise (simulation only)"
        )
        sub.add_argument(
            "--json", action="store_true", help="print one JSON object instead of tables"
        )
    return parser


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from ldp_aggregator.app import create_app
    from ldp_aggregator.storage.engine import make_engine, ping

    settings, generated = _settings(args.database_url).with_generated_tokens()
    engine = make_engine(settings.database_url)
    try:
        ping(engine)  # a bad URL or an unreachable database is one line, not a traceback
    finally:
        engine.dispose()
    for role, token in generated.items():
        print(
            f"ldpcollect: no {role} token configured; generated one for this run: {token}",
            file=sys.stderr,
        )
    # no access log: it would record the client IP address of every report
    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
    )
    return 0


def _settings(database_url: str | None) -> Settings:
    from ldp_aggregator.settings import Settings

    return Settings() if database_url is None else Settings(database_url=database_url)


def _migrate(args: argparse.Namespace) -> int:
    from ldp_aggregator.storage.engine import make_engine
    from ldp_aggregator.storage.migrate import current_revision, upgrade

    engine = make_engine(_settings(args.database_url).database_url)
    try:
        upgrade(engine)
        print(f"ldpcollect: database schema at revision {current_revision(engine)}")
    finally:
        engine.dispose()
    return 0


def _progress_bar(sent: int, total: int) -> None:
    width = 30
    filled = int(width * sent / total)
    bar = "#" * filled + "-" * (width - filled)
    end = "\n" if sent >= total else ""
    print(f"\rclients reporting [{bar}] {sent:,}/{total:,}", end=end, file=sys.stderr, flush=True)


def _demo(args: argparse.Namespace) -> int:
    from ldp_aggregator.demo import DemoOptions, format_table, run_demo, simulate

    options = DemoOptions(
        epsilon=args.epsilon,
        clients=args.clients,
        mechanism=args.mechanism,
        confidence=args.confidence,
        seed=args.seed,
        budget=args.budget,
    )
    show_progress = not args.json or sys.stderr.isatty()
    progress = _progress_bar if show_progress else None
    if args.command == "simulate":
        if not args.admin_token or not args.analyst_token:
            raise AuthenticationError(
                "simulate needs --admin-token and --analyst-token "
                "(or LDPCOLLECT_ADMIN_TOKEN and LDPCOLLECT_ANALYST_TOKEN)"
            )
        result = simulate(args.url, args.admin_token, args.analyst_token, options, progress)
    else:
        result = run_demo(options, progress)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(format_table(result))
    return 0


def _fail(message: str) -> int:
    print(f"ldpcollect: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "migrate":
            return _migrate(args)
        return _demo(args)
    except LDPError as error:
        return _fail(error.detail)
    except ValidationError as error:  # settings from the environment
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "settings"
        return _fail(f"invalid setting {where}: {first['msg']}")
    except SQLAlchemyError as error:
        cause = getattr(error, "orig", None) or error
        return _fail(f"database: {str(cause).strip().splitlines()[0]}")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
