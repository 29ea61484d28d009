"""Run the Alembic migrations from code (``upgrade head`` at startup).

The Alembic config is built here, with ``script_location`` taken from the installed
package, so the migrations run the same from a checkout and from a wheel. On
PostgreSQL a transaction-scoped advisory lock serialises replicas that start at once.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

import ldp_aggregator.migrations

MIGRATIONS_DIR = Path(ldp_aggregator.migrations.__file__).resolve().parent
_PG_MIGRATION_LOCK = 0x6C6470636F6C6C  # "ldpcoll": any constant shared by all replicas


def alembic_config() -> Config:
    """An Alembic config pointing at the package's migrations (no alembic.ini)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str | None:
    """The newest revision shipped with the package."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (``None`` for a fresh database)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema up to ``revision`` (idempotent)."""
    config = alembic_config()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
            )
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
