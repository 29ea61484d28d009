"""Run the Alembic migrations from code (``upgrade head`` at startup), and say whether a
database's schema is the one this code needs.

The Alembic config is built here, with ``script_location`` taken from the installed
package, so the migrations run the same from a checkout and from a wheel. On
PostgreSQL a transaction-scoped advisory lock serialises replicas that start at once.

With ``LDPCOLLECT_MIGRATE_ON_STARTUP=false`` (migrations left to ``ldpcollect migrate``,
as docker-compose does) a process checks the schema instead (:func:`schema_of`): ``serve``
and ``fold`` refuse to start, with one line, on a schema other than their own, and
``/readyz`` answers 503 while the schema is older than the code, so that a replica
started before its migration job finished takes no traffic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

import ldp_aggregator.migrations
from ldp_shared.errors import ConfigurationError

MIGRATIONS_DIR = Path(ldp_aggregator.migrations.__file__).resolve().parent
_PG_MIGRATION_LOCK = 0x6C6470636F6C6C  # "ldpcoll": any constant shared by all replicas


def alembic_config() -> Config:
    """An Alembic config pointing at the package's migrations (no alembic.ini)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str | None:
    """The newest revision shipped with the package."""
    return _shipped()[0]


@functools.lru_cache(maxsize=1)
def _shipped() -> tuple[str | None, frozenset[str]]:
    """The head and every revision shipped with the package (read once: files)."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return scripts.get_current_head(), frozenset(r.revision for r in scripts.walk_revisions())


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


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema stands against this code's migrations."""

    current: str | None
    """The database's revision (``None``: no schema yet)."""
    head: str | None
    """The revision this code needs: the newest it ships."""
    known: bool
    """Whether ``current`` is one of this code's revisions (or ``None``): if not, a newer
    ldpcollect migrated the database."""

    @property
    def behind(self) -> bool:
        """Older than this code: a table or column it uses may be missing."""
        return self.known and self.current != self.head

    def problem(self, who: str) -> str | None:
        """One line on what is wrong and what to run (``who``: the process that needs the
        schema); ``None`` when the schema is this code's."""
        if self.current == self.head:
            return None
        if self.behind:
            at = self.current or "none (nothing migrated yet)"
            return (
                f"the database's schema is at revision {at}, {who} needs {self.head}: run"
                " `ldpcollect migrate` first (or leave LDPCOLLECT_MIGRATE_ON_STARTUP on)"
            )
        return (
            f"the database's schema is at revision {self.current}, which {who} does not"
            f" know (it needs {self.head}): a newer ldpcollect migrated it; run that version"
        )


def schema_of(engine: Engine) -> SchemaState:
    """The state of the database's schema (one read of Alembic's version table)."""
    current = current_revision(engine)
    head, revisions = _shipped()
    return SchemaState(current, head, current is None or current in revisions)


def check_schema(engine: Engine, who: str) -> None:
    """:class:`~ldp_shared.errors.ConfigurationError` (one line) unless the database's
    schema is this code's."""
    problem = schema_of(engine).problem(who)
    if problem is not None:
        raise ConfigurationError(problem)
