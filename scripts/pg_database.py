"""A throwaway database on a running PostgreSQL server, for scripts/fleet-local.sh.

    python scripts/pg_database.py create SERVER_URL   # prints the new database's URL
    python scripts/pg_database.py drop DATABASE_URL   # drops it (and ends its sessions)

``SERVER_URL`` is a SQLAlchemy URL of any database on the server
(``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``) whose role may create
databases. ``create`` makes ``ldpcollect_fleet_<random>`` and prints the same URL naming
it. Any failure (no server, no driver, no permission) is one line on stderr and exit
status 1; nothing is created then.
"""

from __future__ import annotations

import secrets
import sys

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

PREFIX = "ldpcollect_fleet_"


def _autocommit(url: str) -> Engine:
    return create_engine(url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})


def create(server_url: str) -> str:
    name = f"{PREFIX}{secrets.token_hex(6)}"
    engine = _autocommit(server_url)
    try:
        with engine.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop(database_url: str) -> None:
    url = make_url(database_url)
    name = url.database or ""
    if not name.startswith(PREFIX):  # never drop a database this script did not make
        raise ValueError(f"not a fleet database: {name!r}")
    engine = _autocommit(url.set(database="postgres").render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("create", "drop"):
        print("usage: pg_database.py create SERVER_URL | drop DATABASE_URL", file=sys.stderr)
        return 2
    try:
        if argv[0] == "create":
            print(create(argv[1]))
        else:
            drop(argv[1])
    except Exception as error:
        cause = getattr(error, "orig", None) or error
        line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        print(f"pg_database: {argv[0]}: {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
